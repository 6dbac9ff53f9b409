<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

/**
 * A background `queuety work` with its output captured to a file.
 */
final class DaemonProcess
{
    /** @var resource */
    private $proc;
    private string $log;

    /**
     * @param list<string>          $command
     * @param array<string, string> $env
     */
    public function __construct(array $command, array $env)
    {
        $this->log = (string) tempnam(sys_get_temp_dir(), 'qtphp-daemon');
        $proc = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $this->log, 'a'], 2 => ['file', $this->log, 'a']],
            $pipes, null, $env + getenv());
        if (!is_resource($proc)) {
            throw new \RuntimeException('cannot start ' . $command[0]);
        }
        $this->proc = $proc;
    }

    public function running(): bool
    {
        return proc_get_status($this->proc)['running'];
    }

    public function output(): string
    {
        return (string) file_get_contents($this->log);
    }

    /**
     * SIGTERM (a graceful stop), then SIGKILL if it lingers.
     */
    public function stop(): void
    {
        proc_terminate($this->proc, 15);
        $deadline = microtime(true) + 5;
        while (proc_get_status($this->proc)['running'] && microtime(true) < $deadline) {
            usleep(50_000);
        }
        if (proc_get_status($this->proc)['running']) {
            proc_terminate($this->proc, 9);
        }
        proc_close($this->proc);
        @unlink($this->log);
    }
}
