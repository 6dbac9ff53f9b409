<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

use Queuety\Bridge\Frames;

/**
 * bin/queuety-php-worker run the way the daemon runs it: requests on its
 * stdin, frames back on its fd 3.
 */
final class WorkerProcess
{
    /** @var resource */
    private $proc;
    /** @var array<int, resource> */
    private array $pipes = [];
    private int $seq = 0;

    /**
     * @param list<string> $args
     */
    public function __construct(array $args)
    {
        $bin = dirname(__DIR__, 2) . '/bin/queuety-php-worker';
        $this->proc = proc_open(array_merge([PHP_BINARY, $bin], $args), [
            0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w'], 3 => ['pipe', 'w'],
        ], $this->pipes);
    }

    /**
     * @return array<mixed>
     */
    public function read(): array
    {
        $frame = Frames::read($this->pipes[3]);
        if ($frame === null) {
            throw new \RuntimeException('the worker closed fd 3; stderr: ' . stream_get_contents($this->pipes[2]));
        }
        return json_decode($frame, true, 512, JSON_THROW_ON_ERROR);
    }

    /**
     * The raw bytes of the next frame.
     */
    public function read_raw(): string
    {
        return (string) Frames::read($this->pipes[3]);
    }

    /**
     * Send a run request; returns its seq.
     *
     * @param array<mixed> $payload
     */
    public function run(string $handler, array $payload = [], int $attempt = 1): int
    {
        $seq = ++$this->seq;
        Frames::write($this->pipes[0], [
            'type' => 'run', 'seq' => $seq,
            'job' => ['id' => 100 + $seq, 'handler' => $handler, 'queue' => 'mail', 'attempt' => $attempt, 'max_attempts' => 3, 'priority' => 2],
            'payload' => $payload,
        ]);
        return $seq;
    }

    /**
     * Send a run request built by the test (seq and type are filled in);
     * returns its seq.
     *
     * @param array<mixed> $frame
     */
    public function send(array $frame): int
    {
        $seq = ++$this->seq;
        Frames::write($this->pipes[0], ['type' => 'run', 'seq' => $seq] + $frame);
        return $seq;
    }

    /**
     * Send a workflow step request: kind "step", or "item" with $item set
     * to [item, item_index].
     *
     * @param array<mixed> $state
     * @param array{0: mixed, 1: int}|null $item
     */
    public function run_step(string $handler, array $state, ?array $item = null): int
    {
        $seq = ++$this->seq;
        $frame = [
            'type' => 'run', 'seq' => $seq, 'kind' => $item === null ? 'step' : 'item',
            'job' => ['id' => 100 + $seq, 'handler' => $handler, 'queue' => 'default', 'attempt' => 1, 'max_attempts' => 3, 'priority' => 0],
            'state' => $state,
        ];
        if ($item !== null) {
            $frame['item'] = $item[0];
            $frame['item_index'] = $item[1];
        }
        Frames::write($this->pipes[0], $frame);
        return $seq;
    }

    /**
     * Ask for a class's (or registered name's) metadata.
     */
    public function metadata(string $class): int
    {
        $seq = ++$this->seq;
        Frames::write($this->pipes[0], ['type' => 'run', 'seq' => $seq, 'kind' => 'metadata', 'class' => $class]);
        return $seq;
    }

    /**
     * Close stdin and collect how the worker ended.
     *
     * @return array{code: int, stdout: string, stderr: string}
     */
    public function finish(): array
    {
        fclose($this->pipes[0]);
        $stdout = stream_get_contents($this->pipes[1]);
        $stderr = stream_get_contents($this->pipes[2]);
        foreach ([1, 2, 3] as $i) {
            fclose($this->pipes[$i]);
        }
        return ['code' => proc_close($this->proc), 'stdout' => (string) $stdout, 'stderr' => (string) $stderr];
    }
}
