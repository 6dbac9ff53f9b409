<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\LocalActivityOptions;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * End to end, seed 002: the bridge dispatches a workflow whose second step
 * is a local activity of a PHP class; `queuety work --workflows --php ...`
 * runs the first step through the queue and the local activity at once in
 * the same worker, in its PHP pool, without claiming it. PHP reads back the
 * workflow's state and the execution and attempt rows the daemon wrote.
 */
final class LocalActivityDaemonTest extends DatabaseTestCase
{
    public function test_a_php_local_activity_runs_in_the_advancing_worker(): void
    {
        $id = Queuety::workflow('receipt')
            ->then('E2eAddStep')
            ->local_activity('E2eDoubleStep', new LocalActivityOptions(maxAttempts: 3, startToCloseTimeout: 10, scheduleToCloseTimeout: 30, heartbeatTimeout: 5))
            ->dispatch(['n' => 1]);

        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/workflow-app.php', PHP_BINARY, $root, $root);
        $daemon = new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '1',
            '--poll-interval', '20ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
        try {
            $done = $this->wait_until(30.0, static fn (): bool => Queuety::workflow_status($id)?->status === WorkflowStatus::Completed);
            $this->assertTrue($done, "workflow completed\ndaemon: " . $daemon->output());
        } finally {
            $daemon->stop();
        }
        $this->assertSame(['n' => 4, 'added_by' => 'php'], Queuety::workflow_status($id)?->state);

        $pdo = $this->conn->pdo();
        $exec = $pdo->query("SELECT execution_mode, queue_bypassed, status, attempt_count, activity_type FROM wp_queuety_activity_executions WHERE workflow_id = {$id}")
            ->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertSame([['execution_mode' => 'local', 'queue_bypassed' => 1, 'status' => 'completed', 'attempt_count' => 1, 'activity_type' => 'E2eDoubleStep']], $exec);
        $attempts = $pdo->query("SELECT status FROM wp_queuety_activity_attempts WHERE workflow_id = {$id}")->fetchAll(\PDO::FETCH_COLUMN);
        $this->assertSame(['completed'], $attempts);

        // The local step's workflow events carry the local markers.
        $events = $pdo->query("SELECT event, context FROM wp_queuety_workflow_events WHERE workflow_id = {$id} AND step_index = 1 ORDER BY id")
            ->fetchAll(\PDO::FETCH_ASSOC);
        $this->assertSame(['step_started', 'step_completed'], array_column($events, 'event'));
        foreach ($events as $event) {
            $context = json_decode((string) $event['context'], true, 512, JSON_THROW_ON_ERROR);
            $this->assertSame('local', $context['execution_mode']);
            $this->assertTrue($context['local_activity']);
        }
    }
}
