<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\QueuetyBinary;
use Queuety\WorkerSessionOptions;

/**
 * End to end, seed 000: the bridge dispatches a workflow whose second step
 * is bound to the session gpu-render (queue gpu-activities, requirement
 * gpu:nvidia-l4). Two `queuety work` daemons serve both queues; only one
 * advertises the capability. The bound step runs on that one, the first
 * step anywhere, and PHP reads back the session lease the daemon wrote.
 */
final class WorkerSessionDaemonTest extends DatabaseTestCase
{
    public function test_a_session_bound_step_runs_on_the_capable_daemon(): void
    {
        $this->assertStringContainsString('--capability', QueuetyBinary::exec(['work', '--help']));
        $builder = Queuety::workflow('render-video')->then('E2eAddStep');
        $builder->worker_session('gpu-render', new WorkerSessionOptions(
            queue: 'gpu-activities',
            requirements: ['gpu:nvidia-l4'],
            leaseSeconds: 120,
            ttlSeconds: 1800,
            maxConcurrentActivities: 1,
        ))->then('E2eDoubleStep');
        $id = $builder->dispatch(['n' => 1]);

        $cpu = $this->start_daemon('cpu-1', []);
        $gpu = $this->start_daemon('gpu-1', ['--capability', 'gpu:nvidia-l4']);
        try {
            $done = $this->wait_until(30.0, static fn (): bool => Queuety::workflow_status($id)?->status === WorkflowStatus::Completed);
            $this->assertTrue($done, "workflow completed\ncpu: " . $cpu->output() . "\ngpu: " . $gpu->output());
            $this->assertSame(['n' => 4, 'added_by' => 'php'], Queuety::workflow_status($id)?->state);

            $bound = $this->conn->pdo()->query(
                "SELECT queue, session_id, reserved_by FROM wp_queuety_jobs WHERE workflow_id = {$id} AND step_index = 1"
            )->fetch(\PDO::FETCH_ASSOC);
            $this->assertSame(['queue' => 'gpu-activities', 'session_id' => 'gpu-render', 'reserved_by' => 'gpu-1'], $bound);

            $session = $this->conn->pdo()->query(
                "SELECT status, lease_owner, requirements, ttl_seconds FROM wp_queuety_worker_sessions WHERE session_id = 'gpu-render'"
            )->fetch(\PDO::FETCH_ASSOC);
            $this->assertSame(['status' => 'active', 'lease_owner' => 'gpu-1', 'requirements' => '["gpu:nvidia-l4"]', 'ttl_seconds' => 1800], $session);
        } finally {
            $cpu->stop();
            $gpu->stop();
        }
        // A graceful stop closes the sessions the daemon held.
        $status = $this->conn->pdo()->query("SELECT status FROM wp_queuety_worker_sessions WHERE session_id = 'gpu-render'")->fetchColumn();
        $this->assertSame('closed', $status);
    }

    /** @param list<string> $extra */
    private function start_daemon(string $worker_id, array $extra): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/workflow-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess(array_merge([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '1',
            '--queue', 'default,gpu-activities', '--worker-id', $worker_id, '--poll-interval', '20ms'], $extra), ['QUEUETY_DSN' => $this->go_dsn()]);
    }
}
