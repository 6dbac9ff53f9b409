<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * End to end: PHP adds a schedule, two `queuety work` daemons tick the
 * table every 50 ms while PHP ticks it too, and the jobs run in the
 * daemons' PHP pools, and PHP reads the rows back. With "2 seconds"
 * counted from each tick, two jobs of one run would be less than 2 s
 * apart. (Ticks this far apart rarely collide; the race itself is proved by
 * queuety's TestScheduleRunsDispatchOnceAcrossDaemonsAndPHP.)
 */
final class ScheduleDaemonTest extends DatabaseTestCase
{
    public function test_daemons_and_php_tick_one_table_and_enqueue_each_run_once(): void
    {
        Queuety::schedule('noop', ['from' => 'php'])->every('2 seconds')->id();
        $this->conn->pdo()->exec('UPDATE wp_queuety_schedules SET next_run = UTC_TIMESTAMP() - INTERVAL 1 MINUTE');

        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/worker-app.php', PHP_BINARY, $root, $root);
        $daemons = [];
        foreach (['a', 'b'] as $name) {
            $daemons[] = new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--php', $php, '--php-workers', '1',
                '--poll-interval', '20ms', '--schedule-interval', '50ms', '--worker-id', "sched-{$name}"], ['QUEUETY_DSN' => $this->go_dsn()]);
        }
        try {
            $deadline = microtime(true) + 5;
            while (microtime(true) < $deadline) {
                Queuety::run_scheduler();
                usleep(30_000);
            }
            // The daemons tick on while the jobs drain: a run enqueued
            // after the drain was seen would have no log rows yet. Stop
            // the schedule first (a tick holding the row commits before
            // this UPDATE does, so its job is drained too).
            $this->conn->pdo()->exec('UPDATE wp_queuety_schedules SET enabled = 0');
            $drained = $this->wait_until(20.0, fn (): bool => (int) $this->conn->pdo()
                ->query("SELECT COUNT(*) FROM wp_queuety_jobs WHERE status <> 'completed'")->fetchColumn() === 0);
            $this->assertTrue($drained, "jobs completed\ndaemon: " . $daemons[0]->output());
        } finally {
            foreach ($daemons as $d) {
                $d->stop();
            }
        }

        $jobs = $this->conn->pdo()->query('SELECT handler, payload, priority, max_attempts, available_at FROM wp_queuety_jobs ORDER BY id')
            ->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertGreaterThanOrEqual(2, count($jobs), 'five seconds of a 2-second schedule');
        $previous = null;
        foreach ($jobs as $job) {
            $this->assertSame(['noop', '{"from":"php"}', 0, 3], [$job['handler'], $job['payload'], $job['priority'], $job['max_attempts']]);
            $at = strtotime($job['available_at'] . ' UTC');
            if ($previous !== null) {
                $this->assertGreaterThanOrEqual(2, $at - $previous, 'one job per run: ' . json_encode(array_column($jobs, 'available_at')));
            }
            $previous = $at;
        }
        $logs = $this->conn->pdo()->query("SELECT COUNT(*) FROM wp_queuety_logs WHERE event NOT IN ('started', 'completed')")->fetchColumn();
        $this->assertSame(0, (int) $logs, 'ticks write no log rows');
        $this->assertSame(count($jobs) * 2, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_logs')->fetchColumn(), 'started and completed per job');
    }
}
