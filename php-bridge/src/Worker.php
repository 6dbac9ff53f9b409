<?php

declare(strict_types=1);

namespace Queuety;

/**
 * The facade's worker without WordPress: the queuety daemon, run on this
 * connection's tables. flush() and recover_stale() run `queuety flush` and
 * `queuety recover` and return their counts; run() runs `queuety work`
 * in the foreground. The binary is QUEUETY_BIN (default `queuety` on the
 * PATH); PHP handlers run when QUEUETY_PHP names the pool command, e.g.
 * "php php-bridge/bin/queuety-php-worker --bootstrap app.php" (the
 * daemon reads it from the environment, as its --php flag).
 */
class Worker
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Work the queue(s) until stopped; with $once, run at most one job.
     *
     * @param string|list<string> $queue
     */
    public function run(string|array $queue = 'default', bool $once = false): void
    {
        $this->exec(array_merge(['work', '--queue', self::queues($queue)], $once ? ['--once'] : []), false);
    }

    /**
     * Run every due job of the queue(s), then return how many ran.
     *
     * @param string|list<string> $queue_name
     */
    public function flush(string|array $queue_name = 'default'): int
    {
        $out = $this->exec(['flush', '--queue', self::queues($queue_name)], true);
        if (!preg_match('/Flushed (\d+) jobs?\./', $out, $m)) {
            throw new \RuntimeException("queuety flush printed no count:\n{$out}");
        }
        return (int) $m[1];
    }

    /**
     * Retry (or bury, at their last attempt) processing jobs not heard
     * from for the stale timeout; the number rescued.
     */
    public function recover_stale(): int
    {
        $out = $this->exec(['recover'], true);
        if (!preg_match('/Recovered (\d+) stale jobs?/', $out, $m)) {
            throw new \RuntimeException("queuety recover printed no count:\n{$out}");
        }
        return (int) $m[1];
    }

    /** Create or upgrade the tables (`queuety migrate`). */
    public function migrate(): void
    {
        $this->exec(['migrate'], true);
    }

    /**
     * The plugin's fixed pool: `queuety work --workers N` (N jobs at once,
     * or with QUEUETY_PHP N PHP processes).
     */
    public function run_pool(int $workers, string $queue = 'default'): void
    {
        $this->exec(['work', '--queue', $queue, '--workers', (string) $workers], false);
    }

    /**
     * The plugin's adaptive pool: `queuety work --min-workers --max-workers`
     * (the daemon keeps the pool at its maximum).
     */
    public function run_auto_scaling_pool(int $min_workers, int $max_workers, string $queue = 'default'): void
    {
        $this->exec(['work', '--queue', $queue, '--min-workers', (string) $min_workers, '--max-workers', (string) $max_workers], false);
    }

    /**
     * @param list<string> $args
     * @throws \RuntimeException When the binary cannot start or fails.
     */
    private function exec(array $args, bool $capture): string
    {
        $bin = getenv('QUEUETY_BIN');
        $command = array_merge([is_string($bin) && $bin !== '' ? $bin : 'queuety',
            '--prefix', $this->conn->prefix(), '--table-prefix', $this->conn->table_prefix(),
        ], $args);
        // The DSN holds the password: the environment, not the command
        // line other users can read.
        $env = getenv() + ['QUEUETY_DSN' => ''];
        $env['QUEUETY_DSN'] = $this->conn->go_dsn();
        // Not captured: the daemon writes to this process's output (the
        // CLI's streams; elsewhere PHP's own).
        $spec = $capture ? [1 => ['pipe', 'w'], 2 => ['pipe', 'w']]
            : (defined('STDOUT') ? [1 => STDOUT, 2 => STDERR] : [1 => ['file', 'php://stdout', 'w'], 2 => ['file', 'php://stderr', 'w']]);
        $proc = proc_open($command, $spec, $pipes, null, $env);
        if (!is_resource($proc)) {
            throw new \RuntimeException("Cannot start {$command[0]}: set QUEUETY_BIN to the queuety binary.");
        }
        $out = '';
        if ($capture) {
            $out = (string) stream_get_contents($pipes[1]) . (string) stream_get_contents($pipes[2]);
            fclose($pipes[1]);
            fclose($pipes[2]);
        }
        $code = proc_close($proc);
        if ($code !== 0) {
            throw new \RuntimeException(sprintf('queuety %s exited %d%s', $args[0], $code, $out === '' ? '.' : ":\n{$out}"));
        }
        return $out;
    }

    /** @param string|list<string> $queue */
    private static function queues(string|array $queue): string
    {
        return is_array($queue) ? implode(',', $queue) : $queue;
    }
}
