<?php

declare(strict_types=1);

namespace Queuety\Tests\Support;

/**
 * The calls file the fixture classes (fixtures/*-classes.php) append one
 * JSON line to per call they receive, so a test can see what the daemon's
 * PHP processes ran. With $env the path is handed to those processes in
 * QUEUETY_TEST_CALLS; without it the test passes the path in a payload.
 */
trait RecordedCalls
{
    private string $calls;

    private function recordCalls(bool $env = true): void
    {
        $this->calls = tempnam(sys_get_temp_dir(), 'qtcalls');
        if ($env) {
            putenv('QUEUETY_TEST_CALLS=' . $this->calls);
        }
    }

    private function forgetCalls(): void
    {
        putenv('QUEUETY_TEST_CALLS');
        @unlink($this->calls);
    }

    /**
     * @return list<array<string, mixed>>
     */
    private function reported(): array
    {
        $lines = array_filter(explode("\n", (string) file_get_contents($this->calls)));
        return array_values(array_map(static fn (string $l): array => json_decode($l, true, 512, JSON_THROW_ON_ERROR), $lines));
    }
}
