<?php

declare(strict_types=1);

namespace Queuety\Tests;

use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DaemonProcess;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\QueuetyBinary;

/**
 * End to end: the bridge dispatches a 2-step workflow of PHP step classes
 * and `queuety work --workflows --php ...` runs it to completion, the
 * steps running in the PHP pool; workflow_status() then shows the final
 * state. The pool is the engine's step runner: every workflow step
 * without a Go handler is claimed and run in PHP.
 */
final class WorkflowDaemonTest extends DatabaseTestCase
{
    private const COMPLETE_WAIT = 20.0;

    public function test_daemon_runs_php_steps_of_a_bridge_dispatched_workflow(): void
    {
        $this->assertStringContainsString('--workflows', QueuetyBinary::exec(['work', '--help']));
        $id = Queuety::workflow('e2e')->then('E2eAddStep')->then('E2eDoubleStep')->dispatch(['n' => 1]);

        $daemon = $this->start_daemon();
        try {
            $done = $this->wait_until(self::COMPLETE_WAIT, static fn (): bool => Queuety::workflow_status($id)?->status === WorkflowStatus::Completed);
            $status = Queuety::workflow_status($id);
            $this->assertTrue($done, 'workflow completed; daemon running: ' . var_export($daemon->running(), true)
                . '; status: ' . var_export($status, true) . "\ndaemon: " . $daemon->output());
            $this->assertSame('1', $this->job_column($id, 0, 'attempts'), 'the first PHP step ran once');
            $this->assertSame(['n' => 4, 'added_by' => 'php'], $status?->state);
            $this->assertSame(2, $status?->current_step);
        } finally {
            $daemon->stop();
        }
    }

    private function start_daemon(): DaemonProcess
    {
        $root = dirname(__DIR__, 2);
        $php = sprintf('%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/workflow-app.php', PHP_BINARY, $root, $root);
        return new DaemonProcess([getenv('QUEUETY_BIN') ?: 'queuety', 'work', '--workflows', '--php', $php, '--php-workers', '1',
            '--poll-interval', '20ms', '--signal-poll-interval', '200ms'], ['QUEUETY_DSN' => $this->go_dsn()]);
    }

    private function job_column(int $workflow_id, int $step, string $column): ?string
    {
        $v = $this->conn->pdo()->query("SELECT {$column} FROM wp_queuety_jobs WHERE workflow_id = {$workflow_id} AND step_index = {$step} ORDER BY id LIMIT 1")->fetchColumn();
        return $v === false || $v === null ? null : (string) $v;
    }
}
