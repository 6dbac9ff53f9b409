<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Bridge\ScheduleRows;
use Queuety\Enums\ExpressionType;
use Queuety\Enums\OverlapPolicy;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Queuety::schedule() from PHP (a handler in the pool, or the site) writes
 * the schedules rows of the schedule_interval and schedule_cron
 * recordings; next_run is computed the plugin's way (cron day-of-month
 * AND day-of-week).
 */
final class ScheduleFacadeTest extends DatabaseTestCase
{
    public function test_rows_match_the_recordings(): void
    {
        $a = Queuety::schedule('record', ['source' => 'interval'])->every('10 minutes')->id();
        $b = Queuety::schedule('noop', ['source' => 'cron'])->cron('*/15 * * * *')->id();
        $c = Queuety::schedule('weekday', ['source' => 'weekday 03:00'])->cron('0 3 * * 1-5')->on_queue('critical')->overlap(OverlapPolicy::Skip)->id();
        $this->assertSame([1, 2, 3], [$a, $b, $c]);

        $want = json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/testdata/queuety-plugin/schedule_interval.json'), true)['snapshots'][0]['schedules'][0];
        $row = $this->conn->pdo()->query('SELECT * FROM wp_queuety_schedules WHERE id = 1')->fetch(\PDO::FETCH_ASSOC);
        foreach (['handler', 'payload', 'queue', 'expression', 'expression_type', 'overlap_policy', 'enabled'] as $col) {
            $this->assertSame((string) $want[$col], (string) $row[$col], $col);
        }
        $this->assertEqualsWithDelta(time() + 600, strtotime($row['next_run'] . ' UTC'), 2, 'now + 10 minutes, UTC');
        $this->assertSame(['critical', 'skip'], array_values($this->conn->pdo()->query('SELECT queue, overlap_policy FROM wp_queuety_schedules WHERE id = 3')->fetch(\PDO::FETCH_ASSOC)));

        // Going out of scope writes it too, as the plugin's destructor does.
        (static function (): void {
            Queuety::schedule('later')->every('1 hour');
        })();
        $this->assertSame('1', (string) $this->conn->pdo()->query("SELECT COUNT(*) FROM wp_queuety_schedules WHERE handler = 'later'")->fetchColumn());
    }

    public function test_next_run_as_the_plugin_computes_it(): void
    {
        $cron = json_decode((string) file_get_contents(dirname(__DIR__, 2) . '/testdata/queuety-plugin/schedule_cron.json'), true)['snapshots'][0];
        $from = new \DateTimeImmutable($cron['schedules'][0]['created_at'], new \DateTimeZone('UTC'));
        foreach ($cron['schedules'] as $s) {
            $this->assertSame($s['next_run'], ScheduleRows::next_run($s['expression'], ExpressionType::Cron, $from)->format('Y-m-d H:i:s'), $s['expression']);
        }
        $this->assertSame('2026-12-01 12:00:00', ScheduleRows::next_run('0 * * * *', ExpressionType::Cron, new \DateTimeImmutable('2026-12-01 11:00:00', new \DateTimeZone('UTC')))->format('Y-m-d H:i:s'), 'strictly after');
        $this->expectExceptionMessage('Cron expression must have exactly 5 fields, got: * *');
        ScheduleRows::next_run('* *', ExpressionType::Cron, $from);
    }
}
