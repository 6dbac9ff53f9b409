<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\Connection;
use Queuety\Queuety;

/**
 * The PHP end of the daemon's handler pool: announce readiness, then run
 * one job per request until the daemon closes stdin. Requests arrive on
 * stdin, answers leave on fd 3, so stdout stays free for whatever the
 * application prints.
 */
final class Worker
{
    public const PROTOCOL = 1;

    private const NOT_STARTED_BY_DAEMON = 'queuety-php-worker answers the queuety daemon on file descriptor 3, which is not open for writing: '
        . 'start it through the daemon, e.g. queuety work --php "php php-bridge/bin/queuety-php-worker --bootstrap app.php".';

    private readonly JobRunner $runner;

    /**
     * @param resource $requests  Where requests arrive (STDIN).
     * @param resource $responses Where frames go (fd 3).
     */
    public function __construct(private $requests, private $responses)
    {
        $this->runner = new JobRunner(function (int $seq, array $progress): void {
            // Default flags, as the plugin's beat() encodes progress: a
            // value it cannot encode throws in the handler there too.
            Frames::write($this->responses, ['type' => 'heartbeat', 'seq' => $seq, 'progress' => $progress]);
        });
    }

    /**
     * The daemon's response pipe, or an explanation of how to run this.
     *
     * @return resource
     */
    public static function open_responses()
    {
        $stream = @fopen('php://fd/3', 'wb');
        if ($stream === false) {
            throw new \RuntimeException(self::NOT_STARTED_BY_DAEMON);
        }
        return $stream;
    }

    /**
     * PHP's own error display goes to stderr, never into stdout noise the
     * application might rely on being quiet.
     */
    public static function prepare_runtime(): void
    {
        $display = strtolower((string) ini_get('display_errors'));
        if ($display !== '' && $display !== '0' && $display !== 'off' && $display !== 'stderr') {
            ini_set('display_errors', 'stderr');
        }
        // A job's SIGALRM time limit ($timeout, the Timeout middleware:
        // the bridge's or the plugin's) must interrupt the handler.
        if (function_exists('pcntl_async_signals')) {
            pcntl_async_signals(true);
        }
    }

    /**
     * Once WordPress is loaded (--wp-load), give the facade its database,
     * as the plugin does on load, so handlers can dispatch follow-up jobs.
     */
    public static function init_from_wordpress(): void
    {
        if (Runtime::plugin_loaded()) {
            return; // the active plugin set its own facade up on load
        }
        try {
            Queuety::connection();
            return; // the application did it already
        } catch (\RuntimeException) {
        }
        if (!defined('DB_HOST') || !defined('DB_NAME') || !defined('DB_USER') || !defined('DB_PASSWORD')) {
            return;
        }
        $prefix = $GLOBALS['wpdb']->prefix ?? $GLOBALS['table_prefix'] ?? 'wp_';
        Queuety::init(new Connection(
            (string) constant('DB_HOST'),
            (string) constant('DB_NAME'),
            (string) constant('DB_USER'),
            (string) constant('DB_PASSWORD'),
            is_string($prefix) ? $prefix : 'wp_',
        ));
    }

    /**
     * Serve until stdin closes; returns the exit code.
     *
     * @throws \RuntimeException When the daemon cannot be written to.
     */
    public function serve(): int
    {
        try {
            $this->send(['type' => 'ready', 'protocol' => self::PROTOCOL, 'pid' => getmypid(), 'php' => PHP_VERSION]);
        } catch (\RuntimeException) {
            // fd 3 was inherited from something else, read-only or closed.
            throw new \RuntimeException(self::NOT_STARTED_BY_DAEMON);
        }
        while (($frame = Frames::read($this->requests)) !== null) {
            try {
                $request = json_decode($frame, true, 1024, JSON_THROW_ON_ERROR);
            } catch (\JsonException $e) {
                fwrite(STDERR, "queuety-php-worker: unreadable request: {$e->getMessage()}\n");
                return 2;
            }
            if (!is_array($request) || ($request['type'] ?? null) !== 'run') {
                fwrite(STDERR, 'queuety-php-worker: unexpected request type ' . json_encode($request['type'] ?? null) . "\n");
                return 2;
            }
            $this->send_result(($request['kind'] ?? null) === 'metadata' ? MetadataRequest::answer($request) : $this->runner->run($request));
        }
        return 0;
    }

    /**
     * @param array<mixed> $result
     */
    private function send_result(array $result): void
    {
        try {
            $this->send($result);
        } catch (\JsonException $e) {
            // A Step's output JSON cannot carry (NAN, a resource): the job
            // fails with the reason instead of the protocol breaking.
            $this->send([
                'type' => 'result',
                'seq' => $result['seq'],
                'ok' => false,
                'error' => ['class' => \JsonException::class, 'message' => 'The handler output cannot be encoded as JSON: ' . $e->getMessage(), 'trace' => $e->getTraceAsString()],
                'memory' => $result['memory'],
            ]);
        }
    }

    /**
     * Invalid UTF-8 in a message or trace is substituted, not fatal.
     *
     * @param array<mixed> $message
     */
    private function send(array $message): void
    {
        Frames::write($this->responses, $message, JSON_INVALID_UTF8_SUBSTITUTE);
    }
}
