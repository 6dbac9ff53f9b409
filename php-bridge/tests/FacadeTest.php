<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Queue control and counts through the facade.
 */
final class FacadeTest extends DatabaseTestCase
{
    public function test_pause_and_resume_write_queue_states_as_the_plugin_does(): void
    {
        $this->assertFalse(Queuety::is_paused('mail'));
        Queuety::pause('mail');
        Queuety::pause('mail');
        $this->assertTrue(Queuety::is_paused('mail'));
        $this->assertSame(['mail'], Queuety::queue()->paused_queues());
        $row = $this->conn->pdo()->query('SELECT queue, paused, paused_at FROM wp_queuety_queue_states')->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertCount(1, $row);
        $this->assertNotNull($row[0]['paused_at']);

        Queuety::resume('mail');
        $this->assertFalse(Queuety::is_paused('mail'));
        $this->assertSame(0, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_queue_states')->fetchColumn(), 'resume deletes the row');
    }

    public function test_stats_count_every_status(): void
    {
        $this->assertSame(['pending' => 0, 'processing' => 0, 'completed' => 0, 'failed' => 0, 'buried' => 0], Queuety::stats());
        $a = Queuety::dispatch('a')->on_queue('one')->id();
        Queuety::dispatch('b')->on_queue('one')->id();
        Queuety::dispatch('c')->on_queue('two')->id();
        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'buried' WHERE id = {$a}");
        $this->assertSame(['pending' => 2, 'processing' => 0, 'completed' => 0, 'failed' => 0, 'buried' => 1], Queuety::stats());
        $this->assertSame(['pending' => 1, 'processing' => 0, 'completed' => 0, 'failed' => 0, 'buried' => 1], Queuety::stats('one'));
    }

    public function test_dispatch_job_maps_an_invalid_priority_to_low(): void
    {
        $this->assertSame('0', $this->job(Queuety::dispatch_job('x', [], 'default', 7))['priority']);
        $row = $this->job(Queuety::dispatch_job('y', ['a' => 1], 'q', 2, 30));
        $this->assertSame(['y', '{"a":1}', 'q', '2'], [$row['handler'], $row['payload'], $row['queue'], $row['priority']]);
    }
}
