<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Queuety::replace_wp_cron() where WordPress's filters exist: a recurring
 * WP-Cron event becomes the plugin's schedule row, unscheduling removes
 * it, lookups answer from it, and restore_wp_cron() hands WP-Cron back.
 * A separate process: the stand-in WordPress functions stay in it.
 *
 * @runTestsInSeparateProcesses
 * @preserveGlobalState disabled
 */
final class WpCronBridgeTest extends DatabaseTestCase
{
    public function test_recurring_events_become_schedules_until_restored(): void
    {
        require_once __DIR__ . '/fixtures/wordpress-actions.php';
        Queuety::replace_wp_cron();
        $this->assertTrue(defined('DISABLE_WP_CRON') && DISABLE_WP_CRON);

        $event = (object) ['hook' => 'cleanup', 'timestamp' => time(), 'schedule' => 'hourly', 'args' => ['deep' => true], 'interval' => 3600];
        $this->assertTrue(\apply_filters('pre_schedule_event', null, $event));
        $single = (object) ['hook' => 'once', 'timestamp' => time(), 'schedule' => false, 'args' => []];
        $this->assertNull(\apply_filters('pre_schedule_event', null, $single), 'a single event stays with WP-Cron');

        $row = $this->conn->pdo()->query("SELECT handler, payload, queue, expression, expression_type FROM wp_queuety_schedules")->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertSame([['handler' => '__queuety_cron_cleanup', 'payload' => '{"wp_hook":"cleanup","wp_args":{"deep":true}}',
            'queue' => 'default', 'expression' => '3600 seconds', 'expression_type' => 'interval']], $row);

        $found = \apply_filters('pre_get_scheduled_event', null, 'cleanup', [], null);
        $this->assertSame(['cleanup', '3600 seconds'], [$found->hook, $found->schedule]);
        $this->assertTrue(\apply_filters('pre_unschedule_event', null, time(), 'cleanup', []));
        $this->assertNull(\apply_filters('pre_get_scheduled_event', null, 'cleanup', [], null));

        Queuety::restore_wp_cron();
        $this->assertNull(\apply_filters('pre_schedule_event', null, $event), 'restored: WP-Cron keeps its events');
        $this->assertSame(0, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_schedules')->fetchColumn());
    }
}
