<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\Enums\Priority;
use Queuety\Enums\WorkflowStatus;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;

/**
 * Signals, idempotent dispatch and workflow_status() through the facade,
 * against rows recorded from the plugin (../shared/fixtures/queuety-plugin).
 */
final class WorkflowFacadeTest extends DatabaseTestCase
{
    public function test_signal_row_is_byte_identical_to_the_plugins(): void
    {
        $fixture = FixtureWorkflowTest::fixture('wf_signal.json');
        $id = Queuety::workflow('approve')->then('IncStep')->wait_for_signal('approval')->then('IncStep')->dispatch(['n' => 0]);
        Queuety::signal($id, 'approval', ['by' => 'admin@example.com']);

        $want = $fixture['snapshots'][3]['signals'];
        $got = $this->conn->pdo()->query('SELECT * FROM wp_queuety_signals ORDER BY id')->fetchAll(PDO::FETCH_ASSOC);
        $this->assertCount(count($want), $got);
        foreach ($want as $i => $row) {
            $this->assertSame(array_keys($row), array_keys($got[$i]), 'columns');
            $this->assertSame([(string) $row['id'], (string) $row['workflow_id'], $row['signal_name'], $row['payload']],
                [(string) $got[$i]['id'], (string) $got[$i]['workflow_id'], $got[$i]['signal_name'], $got[$i]['payload']]);
            $this->assertEqualsWithDelta(time(), strtotime($got[$i]['received_at'] . ' UTC'), 2, 'received_at');
        }
        // The bridge only stores the signal; the daemon resumes the wait.
        $this->assertSame(WorkflowStatus::Running, Queuety::workflow_status($id)?->status);
    }

    public function test_signal_helpers_use_the_plugins_signal_names_and_encoding(): void
    {
        Queuety::approve_workflow(7);
        Queuety::reject_workflow(7, ['why' => "n\u{f6}/no"]);
        Queuety::submit_workflow_input(8, ['a' => 1], 'form');
        Queuety::signal(999, 'anything', ['list' => [1.0, 0.1]]); // no such workflow: stored all the same
        $rows = $this->conn->pdo()->query('SELECT workflow_id, signal_name, payload FROM wp_queuety_signals ORDER BY id')->fetchAll(PDO::FETCH_NUM);
        $this->assertEquals([
            [7, 'approval', '[]'],
            [7, 'rejected', '{"why":"n\u00f6\/no"}'],
            [8, 'form', '{"a":1}'],
            [999, 'anything', '{"list":[1,0.1]}'],
        ], $rows);
    }

    public function test_idempotency_key_returns_the_first_workflow(): void
    {
        $fixture = FixtureWorkflowTest::fixture('wf_idempotency_key.json');
        $dispatch = static fn (): int => Queuety::workflow('once')->idempotency_key('order-42')->then('IncStep')->dispatch(['n' => 0]);
        $first = $dispatch();
        $this->assertSame($first, $dispatch());
        $this->assertSame($first, Queuety::workflow('other')->idempotency_key(' order-42 ')->then('X')->dispatch(), 'the key, not the chain, decides');

        $snapshot = $fixture['snapshots'][0];
        $pdo = $this->conn->pdo();
        foreach (['workflows' => 'wp_queuety_workflows', 'jobs' => 'wp_queuety_jobs', 'logs' => 'wp_queuety_logs', 'workflow_dispatch_keys' => 'wp_queuety_workflow_dispatch_keys'] as $name => $table) {
            $this->assertSame(count($snapshot[$name]), (int) $pdo->query("SELECT COUNT(*) FROM {$table}")->fetchColumn(), "{$name} rows, as the plugin left them");
        }
        $this->assertEquals([['order-42', $first]], $pdo->query('SELECT dispatch_key, workflow_id FROM wp_queuety_workflow_dispatch_keys')->fetchAll(PDO::FETCH_NUM));
    }

    public function test_duplicate_key_from_another_process_returns_its_workflow(): void
    {
        // As if another dispatcher committed the key between our SELECT and
        // INSERT: the key row exists, pointing at its workflow.
        $theirs = Queuety::workflow('theirs')->then('A')->dispatch();
        $this->conn->pdo()->exec("INSERT INTO wp_queuety_workflow_dispatch_keys (dispatch_key, workflow_id) VALUES ('k', {$theirs})");
        $this->assertSame($theirs, Queuety::workflow('mine')->idempotency_key('k')->then('A')->dispatch());
        $this->assertSame(1, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_workflows')->fetchColumn(), 'nothing else written');
    }

    public function test_workflow_status_reads_the_plugins_rows(): void
    {
        $signal = FixtureWorkflowTest::fixture('wf_signal.json');
        $this->load_workflow_row($signal['snapshots'][2]['workflows'][0]);
        $status = Queuety::workflow_status(1);
        $this->assertNotNull($status);
        $this->assertSame([1, 'approve', WorkflowStatus::WaitingForSignal, 1, 3], [$status->workflow_id, $status->name, $status->status, $status->current_step, $status->total_steps]);
        $this->assertSame(['n' => 1], $status->state, 'public keys only');
        $this->assertSame(['signal', ['approval'], 'all'], [$status->wait_type, $status->waiting_for, $status->wait_mode]);
        $this->assertSame(['wait_for_approval', 'wait_for_signal'], [$status->current_step_name, $status->current_step_type]);
        $this->assertSame([null, null, null, null, null], [$status->parent_workflow_id, $status->parent_step_index, $status->definition_version, $status->idempotency_key, $status->budget]);
        $this->assertMatchesRegularExpression('/^[0-9a-f]{64}$/', (string) $status->definition_hash);
        $this->assertSame([0, []], [$status->artifact_count, $status->artifact_keys]);
        $this->assertNotNull($status->started_at);
        $this->assertSame([null, null, null], [$status->completed_at, $status->failed_at, $status->error_message]);

        $done = Queuety::workflow_status($this->load_workflow_row($signal['snapshots'][4]['workflows'][0], 2));
        $this->assertSame([WorkflowStatus::Completed, 3, null, null, null], [$done?->status, $done?->current_step, $done?->current_step_name, $done?->current_step_type, $done?->wait_type]);
        $this->assertSame(['n' => 2, 'by' => 'admin@example.com'], $done?->state, 'the signal payload was merged');
        $this->assertSame('2026-11-30 02:44:09', $done?->completed_at);

        $fails = FixtureWorkflowTest::fixture('seed003_wait_all_fails.json');
        $failed = Queuety::workflow_status($this->load_workflow_row($fails['snapshots'][2]['workflows'][2], 3));
        $this->assertSame([WorkflowStatus::Failed, 'Workflow wait could not be satisfied.', 'wait_for_workflows_0', 'wait_for_workflows'],
            [$failed?->status, $failed?->error_message, $failed?->current_step_name, $failed?->current_step_type]);
        $this->assertSame([null, null], [$failed?->wait_type, $failed?->waiting_for], 'the plugin cleared _wait when the wait failed');

        $child = FixtureWorkflowTest::fixture('wf_run_workflow.json');
        $inner = Queuety::workflow_status($this->load_workflow_row($child['snapshots'][2]['workflows'][1], 4));
        $this->assertSame([1, 1], [$inner?->parent_workflow_id, $inner?->parent_step_index]);

        $this->assertNull(Queuety::workflow_status(999));
    }

    public function test_workflow_status_of_a_dispatched_workflow_with_settings(): void
    {
        $id = Queuety::workflow('all')->on_queue('bulk')->with_priority(Priority::High)->version(' v2 ')->idempotency_key('key-1')
            ->max_transitions(10)->max_cost_units(50)->must_complete_within(minutes: 5)
            ->then('StepA')->dispatch(['x' => 1, '_private' => 'hidden']);
        $status = Queuety::workflow_status($id);
        $this->assertNotNull($status);
        $this->assertSame(['x' => 1], $status->state);
        $this->assertSame(['v2', 'key-1'], [$status->definition_version, $status->idempotency_key]);
        $this->assertSame(['max_transitions' => 10, 'max_cost_units' => 50, 'transitions' => 0, 'cost_units' => 0, 'started_workflows' => 0, 'public_state_bytes' => 7], $status->budget);
        $this->assertSame(['0', 'single', WorkflowStatus::Running], [$status->current_step_name, $status->current_step_type, $status->status]);
        $this->assertEqualsWithDelta(time() + 300, strtotime((string) $status->deadline_at . ' UTC'), 2);
    }

    /**
     * Insert a recorded workflows row as is (under another id if given).
     *
     * @param array<string, mixed> $row
     */
    private function load_workflow_row(array $row, ?int $id = null): int
    {
        if ($id !== null) {
            $row['id'] = $id;
        }
        $columns = array_keys($row);
        $this->conn->pdo()->prepare('INSERT INTO wp_queuety_workflows (' . implode(', ', $columns) . ') VALUES (:' . implode(', :', $columns) . ')')
            ->execute($row);
        return (int) $row['id'];
    }
}
