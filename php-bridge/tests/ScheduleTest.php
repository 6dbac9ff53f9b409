<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\CronExpression;
use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\QueuetyBinary;

/**
 * Queuety::schedule() writes the schedule rows the plugin wrote for the
 * same code (testdata/queuety-plugin/schedule_*.json, "code"), its tick
 * enqueues the plugin's job rows, and the Go daemon's tick and PHP's share
 * one table without enqueueing a run twice.
 */
final class ScheduleTest extends DatabaseTestCase
{
    private const TIMES = ['last_run', 'next_run', 'created_at'];

    public function test_schedule_rows_match_the_plugin(): void
    {
        // schedule_interval.json
        Queuety::schedule('record', ['source' => 'interval'])->every('10 minutes')->id();
        $this->assertRowsMatch(self::fixture('schedule_interval.json')['snapshots'][0]['schedules'], 0);
        Queuety::remove_schedule('record');
        $this->conn->pdo()->exec('ALTER TABLE wp_queuety_schedules AUTO_INCREMENT = 1');

        // schedule_overlap.json
        Queuety::schedule('noop', ['policy' => 'skip'])->every('5 minutes')->overlap(OverlapPolicy::Skip)->id();
        Queuety::schedule('record', ['policy' => 'buffer'])->every('5 minutes')->overlap(OverlapPolicy::Buffer)->id();
        $this->assertRowsMatch(self::fixture('schedule_overlap.json')['snapshots'][0]['schedules'], 0);
    }

    public function test_cron_rows_match_the_plugin(): void
    {
        // schedule_cron.json, written when the builders go away.
        Queuety::schedule('noop', ['source' => 'cron'])->cron('*/15 * * * *');
        Queuety::schedule('record', ['source' => 'weekday 03:00'])->cron('0 3 * * 1-5')->on_queue('critical');
        Queuety::schedule('report', ['source' => 'day 1 and monday'])->cron('0 9 1 * 1');
        $want = self::fixture('schedule_cron.json')['snapshots'][0]['schedules'];
        $this->assertRowsMatch($want, null);
        foreach ($this->schedules() as $row) {
            $this->assertSame('00', substr($row['next_run'], -2), 'a whole minute');
            $expected = CronExpression::next_run($row['expression'], new \DateTimeImmutable($row['created_at'], new \DateTimeZone('UTC')));
            $this->assertEqualsWithDelta($expected->getTimestamp(), strtotime($row['next_run'] . ' UTC'), 60, $row['expression']);
        }
    }

    /**
     * The plugin's CronExpression::next_run for the same input (PHP 8.2,
     * UTC), the fixture's among them.
     */
    public function test_cron_next_run_matches_the_plugin(): void
    {
        $cases = [
            ['*/15 * * * *', '2026-12-01 11:08:45', '2026-12-01 11:15:00'],
            ['0 3 * * 1-5', '2026-12-01 11:08:45', '2026-12-02 03:00:00'],
            ['0 9 1 * 1', '2026-12-01 11:08:45', '2027-02-01 09:00:00'],
            ['*/15 * * * *', '2026-12-01 11:15:00', '2026-12-01 11:30:00'],
            ['0 0 * * 7', '2026-12-01 11:08:45', '2026-12-06 00:00:00'],
            ['0 12 * * 5-7', '2026-12-05 12:00:00', '2026-12-11 12:00:00'],
            ['0 0 * * 1-7/2', '2026-12-01 11:08:45', '2026-12-02 00:00:00'],
            ['0 0 31 * *', '2026-02-01 00:00:00', '2026-03-31 00:00:00'],
            ['5,35 */6 * * *', '2026-12-31 23:50:00', '2027-01-01 00:05:00'],
            ['10-20/5 8-10 * * 1,3', '2026-12-01 10:20:00', '2026-12-02 08:10:00'],
            ['0 0 13 * 5', '2026-01-01 00:00:00', '2026-02-13 00:00:00'],
            ['0 */2 */3 */4 *', '2026-05-02 00:00:00', '2026-05-04 00:00:00'],
        ];
        $utc = new \DateTimeZone('UTC');
        foreach ($cases as [$expr, $from, $want]) {
            $this->assertSame($want, CronExpression::next_run($expr, new \DateTimeImmutable($from, $utc))->format('Y-m-d H:i:s'), "{$expr} from {$from}");
        }
    }

    public function test_expressions_the_scheduler_cannot_compute_are_refused(): void
    {
        $scheduler = Queuety::scheduler();
        foreach ([
            [ExpressionType::Interval, 'every hour'], [ExpressionType::Interval, 'hour'], [ExpressionType::Interval, '60'],
            [ExpressionType::Interval, '5 m'], [ExpressionType::Interval, '0 minutes'], [ExpressionType::Interval, '-5 minutes'],
            [ExpressionType::Interval, '1 monday'], [ExpressionType::Cron, '0 9 * * MON'], [ExpressionType::Cron, '0 9 * *'],
            [ExpressionType::Cron, '5/10 * * * *'], [ExpressionType::Cron, '60 * * * *'], [ExpressionType::Cron, '30 2 29 2 *'],
        ] as [$type, $expr]) {
            try {
                $scheduler->calculate_next_run($expr, $type, new \DateTimeImmutable('2026-03-01 00:00:00', new \DateTimeZone('UTC')));
                $this->fail("{$type->value} {$expr} accepted");
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString($expr, $e->getMessage());
            }
        }
        $this->assertSame('2026-01-31 11:50:30', $scheduler->calculate_next_run('1 hour, 30 minutes', ExpressionType::Interval,
            new \DateTimeImmutable('2026-01-31 10:20:30', new \DateTimeZone('UTC')))->format('Y-m-d H:i:s'));
        $this->assertSame([], $this->schedules(), 'nothing written');
    }

    public function test_tick_enqueues_the_plugin_job_and_buffer_waits(): void
    {
        Queuety::schedule('record', ['source' => 'interval'])->every('10 minutes')->id();
        Queuety::schedule('sync')->every('5 minutes')->overlap(OverlapPolicy::Buffer)->id();
        $this->assertSame(0, Queuety::run_scheduler(), 'nothing due');
        $this->conn->pdo()->exec('UPDATE wp_queuety_schedules SET next_run = UTC_TIMESTAMP() - INTERVAL 1 SECOND');
        $busy = Queuety::dispatch('sync')->id();
        $this->assertSame(1, Queuety::run_scheduler());

        // schedule_interval.json snapshot 2: the job row.
        $want = self::fixture('schedule_interval.json')['snapshots'][2];
        $job = $this->job($busy + 1);
        foreach ($want['jobs'][0] as $column => $value) {
            if ($column === 'id') {
                continue;
            }
            if (in_array($column, ['available_at', 'reserved_at', 'completed_at', 'failed_at', 'created_at'], true)) {
                $this->assertSame($value === null, $job[$column] === null, $column);
                continue;
            }
            $this->assertSame($value === null ? null : (string) $value, $job[$column], "column {$column}");
        }
        [$record, $sync] = $this->schedules();
        $this->assertNotNull($record['last_run']);
        $this->assertSame(600, strtotime($record['next_run']) - strtotime($record['last_run']), 'next_run counts from the tick');
        $this->assertNull($sync['last_run'], 'buffer, handler busy: the row is left due');
        $this->assertLessThanOrEqual(time(), strtotime($sync['next_run'] . ' UTC'));
        $this->assertSame(0, $this->log_rows(), 'a tick writes no log rows');

        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'completed' WHERE id = {$busy}");
        $this->assertSame(1, Queuety::run_scheduler(), 'the buffered run goes once the handler is idle');
        $this->assertSame(0, Queuety::run_scheduler(), 'once');
    }

    public function test_go_and_php_ticks_share_the_table(): void
    {
        Queuety::schedule('record', ['source' => 'php'])->every('1 hour')->on_queue('critical')->id();
        $list = json_decode(QueuetyBinary::exec(['schedule', 'list', '--json', '--dsn', $this->go_dsn()]), true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame([['ID' => 1, 'Handler' => 'record', 'Expression' => '1 hour', 'Type' => 'interval', 'Queue' => 'critical',
            'Enabled' => 'yes', 'Last Run' => '—', 'Next Run' => $this->schedules()[0]['next_run']]], $list);

        $this->conn->pdo()->exec('UPDATE wp_queuety_schedules SET next_run = UTC_TIMESTAMP() - INTERVAL 1 MINUTE');
        $out = QueuetyBinary::exec(['schedule', 'run', '--dsn', $this->go_dsn()]);
        $this->assertStringContainsString('Enqueued 1 jobs.', $out);
        $this->assertSame(0, Queuety::run_scheduler(), 'the Go tick ran it: not due for PHP');
        $job = $this->job(1);
        $this->assertSame(['critical', 'record', '{"source":"php"}', '0', '3', 'pending'],
            [$job['queue'], $job['handler'], $job['payload'], $job['priority'], $job['max_attempts'], $job['status']]);

        // And the other way round: Go adds, PHP ticks.
        QueuetyBinary::exec(['schedule', 'add', 'report', '--cron', '*/5 * * * *', '--payload', '{"from":"go"}', '--dsn', $this->go_dsn()]);
        $this->assertSame('{"from":"go"}', Queuety::scheduler()->find('report') !== null ? $this->schedules()[1]['payload'] : null);
        $this->conn->pdo()->exec("UPDATE wp_queuety_schedules SET next_run = UTC_TIMESTAMP() - INTERVAL 1 MINUTE WHERE handler = 'report'");
        $this->assertSame(1, Queuety::run_scheduler());
        $this->assertStringContainsString('Enqueued 0 jobs.', QueuetyBinary::exec(['schedule', 'run', '--dsn', $this->go_dsn()]));
        $this->assertSame('{"from":"go"}', $this->job(2)['payload']);
    }

    /**
     * Compare every column but the times; next_run - created_at as
     * recorded when $delta_from is the snapshot index (intervals).
     *
     * @param list<array<string, mixed>> $want
     */
    private function assertRowsMatch(array $want, ?int $delta_from): void
    {
        $got = $this->schedules();
        $this->assertCount(count($want), $got);
        foreach ($want as $i => $expected) {
            $this->assertSame(array_keys($expected), array_keys($got[$i]), "the plugin's columns, in order");
            foreach ($expected as $column => $value) {
                if (in_array($column, self::TIMES, true)) {
                    $this->assertSame($value === null, $got[$i][$column] === null, "{$column} presence");
                    continue;
                }
                $this->assertSame($value === null ? null : (string) $value, $got[$i][$column], "schedule {$expected['id']} column {$column}");
            }
            if ($delta_from !== null) {
                // next_run is PHP's clock (as the plugin computes it) and
                // created_at the server's DEFAULT: a second may tick between.
                $this->assertEqualsWithDelta(strtotime($expected['next_run']) - strtotime($expected['created_at']),
                    strtotime($got[$i]['next_run']) - strtotime($got[$i]['created_at']), 1, 'next_run = now + interval');
            }
        }
    }

    /** @return list<array<string, string|null>> */
    private function schedules(): array
    {
        $pdo = new PDO($this->conn->dsn(), 'root', '', [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_STRINGIFY_FETCHES => true]);
        return $pdo->query('SELECT * FROM wp_queuety_schedules ORDER BY id')->fetchAll(PDO::FETCH_ASSOC);
    }

    private function log_rows(): int
    {
        return (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_logs')->fetchColumn();
    }

    /** @return array<string, mixed> */
    private static function fixture(string $name): array
    {
        $path = dirname(__DIR__, 2) . '/testdata/queuety-plugin/' . $name;
        self::assertFileExists($path, 'plugin fixture');
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
