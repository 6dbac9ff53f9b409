<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\Connection;
use Queuety\Queue;
use Queuety\Queuety;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\Tests\Support\QueuetyBinary;
use Queuety\WorkflowBuilder;

require_once __DIR__ . '/fixtures/lifecycle-classes.php';

/**
 * Queuety::cancel_workflow / pause_workflow / resume_workflow /
 * retry_workflow. Each operation is done twice on the same rows: by the
 * bridge in this test's database, and by the Go engine (`queuety workflow
 * <op>`, workflow/engine_lifecycle.go) in a twin database; the rows after
 * it must be the same, clocks aside. The pre-operation rows are written
 * the way the runtime leaves them (a step completed, a workflow paused
 * or failed), identically in both. wf_cancel_compensation.json compares
 * a bridge cancel with the plugin's own recorded rows.
 */
final class WorkflowLifecycleTest extends DatabaseTestCase
{
    private const P = 'wp_queuety_';

    private ?string $twin = null;
    private ?Connection $twin_conn = null;

    protected function setUp(): void
    {
        parent::setUp();
        \LifecycleCalls::$calls = [];
    }

    protected function tearDown(): void
    {
        if ($this->twin !== null) {
            self::admin_pdo()->exec("DROP DATABASE IF EXISTS `{$this->twin}`");
        }
        parent::tearDown();
    }

    // ---- cancel ------------------------------------------------------------

    public function test_cancel_buries_jobs_compensates_in_reverse_and_calls_on_cancel(): void
    {
        $setup = function (Connection $c): int {
            $id = $this->builder($c, 'cancel')->then('IncStep')->compensate_with('LifecycleUndo')
                ->then('IncStep')->compensate_with('LifecycleUndoOther')->then('IncStep')->on_cancel('LifecycleOnCancel')
                ->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1, 'LifecycleUndo');
            $this->complete_step($c, $id, 1, 2, 'LifecycleUndoOther');
            // Step 2's job is in flight: processing jobs are buried too.
            $c->pdo()->exec("UPDATE " . self::P . "jobs SET status = 'processing', attempts = 1, reserved_at = NOW() WHERE workflow_id = {$id} AND step_index = 2");
            return $id;
        };
        [$id, $go] = $this->both($setup);

        $before = $this->dump($this->twin_conn, $go);
        try {
            QueuetyBinary::exec(['workflow', 'cancel', (string) $go, '--dsn', $this->dsn((string) $this->twin)]);
            $this->fail('a cancel that cannot run the PHP handlers is refused');
        } catch (\RuntimeException $e) {
            $this->assertStringContainsString('its cancel handling calls PHP classes this process cannot run (LifecycleUndo, LifecycleUndoOther, LifecycleOnCancel)', $e->getMessage());
        }
        $this->assertSame($before, $this->dump($this->twin_conn, $go), 'nothing changed');

        Queuety::cancel_workflow($id);
        $this->go('cancel', $go);
        $this->assertSameRows($id, $go);

        $wf = $this->row('workflows', $id);
        $this->assertSame('cancelled', $wf['status']);
        $this->assertNotNull($wf['completed_at']);
        $state = json_decode($wf['state'], true);
        $this->assertTrue($state['_compensated']);
        $this->assertSame('cancel', $state['_compensation_cause']);
        $this->assertStringEndsWith(',"state":{"n":2}}],"_compensated":true,"_compensation_cause":"cancel"}', $wf['state']);
        $jobs = $this->rows('jobs', $id);
        $this->assertSame(['completed', 'completed', 'buried'], array_column($jobs, 'status'));
        $this->assertSame('Workflow cancelled', $jobs[2]['error_message']);
        $this->assertNotNull($jobs[2]['failed_at']);
        $log = $this->last_log($id);
        $this->assertSame([null, null, 'cancel', 'default', 'workflow_cancelled', null, null],
            [$log['job_id'], $log['step_index'], $log['handler'], $log['queue'], $log['event'], $log['error_message'], $log['context']]);
        // In this process, newest compensation first, then on_cancel.
        $this->assertSame([
            ['LifecycleUndoOther', ['n' => 2], null],
            ['LifecycleUndo', ['n' => 1], null],
            ['LifecycleOnCancel', ['n' => 2], null],
        ], \LifecycleCalls::$calls);

        $this->assertRefused('Workflow ' . $id . ' is already cancelled.', static fn () => Queuety::cancel_workflow($id));
        $this->assertGoRefused('cancel', $go, 'Workflow ' . $go . ' is already cancelled.');
        $this->assertCount(3, \LifecycleCalls::$calls, 'nothing runs twice');
    }

    public function test_cancel_a_paused_or_failed_workflow_and_payload_handlers(): void
    {
        $setup = function (Connection $c): array {
            $paused = $this->builder($c, 'paused')->then('IncStep')->then('IncStep')->dispatch(['n' => 0]);
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'paused' WHERE id = {$paused}");
            $failed = $this->builder($c, 'failed')->on_queue('q2')->then('IncStep')->dispatch(['n' => 0]);
            $this->fail_step($c, $failed, 0, 'boom');
            // A structured handler definition: the payload is the second argument.
            $this->edit_state($c, $failed, static function (array $s): array {
                $s['_on_cancel'] = ['class' => 'LifecycleOnCancel', 'payload' => ['why' => 'ops']];
                $s['_compensation_stack'] = [['step_index' => 0, 'handler' => 'LifecycleUndo', 'payload' => ['k' => 1], 'state' => ['n' => 0]]];
                return $s;
            });
            return [$paused, $failed];
        };
        [[$paused, $failed], [$go_paused, $go_failed]] = $this->both($setup);

        Queuety::cancel_workflow($paused);
        Queuety::cancel_workflow($failed);
        $this->go('cancel', $go_paused);
        $this->go('cancel', $go_failed);
        $this->assertSameRows($paused, $go_paused);
        $this->assertSameRows($failed, $go_failed);
        $this->assertSame('cancelled', $this->row('workflows', $paused)['status']);
        $this->assertSame('q2', $this->last_log($failed)['queue'], "the log's queue is the workflow's");
        $this->assertSame([['LifecycleUndo', ['n' => 0], ['k' => 1]], ['LifecycleOnCancel', ['n' => 0], ['why' => 'ops']]], \LifecycleCalls::$calls);
    }

    public function test_cancel_refusals(): void
    {
        [$done, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'done')->then('IncStep')->dispatch(['n' => 0]);
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'completed', current_step = 1, completed_at = NOW() WHERE id = {$id}");
            $c->pdo()->exec("UPDATE " . self::P . "jobs SET status = 'completed' WHERE workflow_id = {$id}");
            return $id;
        });
        $before = $this->dump($this->conn, $done);
        $this->assertRefused("Workflow {$done} is already completed.", static fn () => Queuety::cancel_workflow($done));
        $this->assertGoRefused('cancel', $go, "Workflow {$go} is already completed.");
        $this->assertSame($before, $this->dump($this->conn, $done), 'nothing written');
        $this->assertRefused('Workflow 987654 not found.', static fn () => Queuety::cancel_workflow(987654));
        $this->assertFalse($this->conn->pdo()->inTransaction());
    }

    public function test_failing_compensation_and_on_cancel_are_logged_as_debug(): void
    {
        $id = Queuety::workflow('bad')->then('IncStep')->compensate_with('LifecycleFailingUndo')
            ->then('IncStep')->compensate_with('LifecycleUndo')->then('IncStep')
            ->on_cancel('LifecycleFailingOnCancel')->dispatch(['n' => 0]);
        $this->complete_step($this->conn, $id, 0, 1, 'LifecycleFailingUndo');
        $this->complete_step($this->conn, $id, 1, 2, 'LifecycleUndo');

        Queuety::cancel_workflow($id);
        $logs = $this->rows('logs', $id);
        $tail = array_map(static fn (array $l): array => [$l['event'], $l['handler'], $l['queue'], $l['job_id'], $l['error_message'], $l['error_class'], $l['context']],
            array_slice($logs, -3));
        $this->assertSame([
            ['workflow_cancelled', 'bad', 'default', null, null, null, null],
            ['debug', 'LifecycleFailingUndo', 'default', null, 'undo failed', null, '{"type":"compensation_failed","reason":"cancel"}'],
            ['debug', 'LifecycleFailingOnCancel', 'default', null, 'on_cancel failed', null, '{"type":"cancel_handler_failed"}'],
        ], $tail);
        $this->assertSame([['LifecycleUndo', ['n' => 2], null]], \LifecycleCalls::$calls, 'the next compensation still ran');
        $state = json_decode($this->row('workflows', $id)['state'], true);
        $this->assertTrue($state['_compensated']);
    }

    /**
     * wf_cancel_compensation.json: the plugin ran IncStep, parked on the
     * signal wait and cancelled. Its pre-cancel rows (snapshot 1) are
     * written over the bridge's dispatch, the bridge cancels, and the rows
     * must be the plugin's post-cancel ones (snapshot 2), clocks aside.
     */
    public function test_cancel_writes_the_plugins_recorded_rows(): void
    {
        $fixture = FixtureWorkflowTest::fixture('wf_cancel_compensation.json');
        [$before, $after] = [$fixture['snapshots'][1], $fixture['snapshots'][2]];
        $id = Queuety::workflow('comp')->then('IncStep')->compensate_with('ReleaseLocks')->wait_for_signal('go')->then('IncStep')->dispatch(['n' => 0]);
        $this->assertSame(1, $id);
        $pdo = $this->conn->pdo();
        $pdo->exec('DELETE FROM ' . self::P . 'jobs');
        $pdo->exec('DELETE FROM ' . self::P . 'logs');
        $pdo->exec('DELETE FROM ' . self::P . 'workflows');
        foreach (['workflows', 'jobs', 'logs', 'workflow_events'] as $table) {
            foreach ($before[$table] as $row) {
                $this->insert($table, $row);
            }
        }

        Queuety::cancel_workflow($id);
        foreach (['workflows', 'jobs', 'logs', 'workflow_events'] as $table) {
            $this->assertSame(self::clockless($after[$table]), self::clockless(self::project($this->all($table), $after[$table])), "{$table} as the plugin left them");
        }
        $this->assertSame($after['workflows'][0]['state'], $this->row('workflows', $id)['state'], 'state bytes');
    }

    /**
     * The same fixture with nothing run: dispatch, cancel. The rows are
     * the recorded ones without what IncStep and the wait placeholder
     * changed (n, the compensation snapshot, _wait, their jobs and logs).
     */
    public function test_cancel_right_after_dispatch_matches_the_plugins_rows_less_the_run(): void
    {
        $fixture = FixtureWorkflowTest::fixture('wf_cancel_compensation.json');
        $after = $fixture['snapshots'][2];
        $id = Queuety::workflow('comp')->then('IncStep')->compensate_with('ReleaseLocks')->wait_for_signal('go')->then('IncStep')->dispatch(['n' => 0]);
        Queuety::cancel_workflow($id);

        $want = json_decode($after['workflows'][0]['state'], true);
        $want['n'] = 0;
        unset($want['_compensation_stack'], $want['_wait']);
        $wf = $this->row('workflows', $id);
        $this->assertSame(json_encode($want), $wf['state']);
        $this->assertSame(['cancelled', 0, 3], [$wf['status'], $wf['current_step'], $wf['total_steps']]);
        $this->assertNotNull($wf['completed_at']);

        [$job] = self::clockless($this->rows('jobs', $id));
        [$recorded] = self::clockless([$after['jobs'][0]]);
        foreach (['queue', 'handler', 'payload', 'priority', 'max_attempts', 'step_index', 'cost_units'] as $column) {
            $this->assertSame($recorded[$column], $job[$column], "job {$column}");
        }
        $this->assertSame(['buried', 'Workflow cancelled', '0', 'set'], [$job['status'], $job['error_message'], $job['attempts'], $job['failed_at']]);

        $logs = self::clockless(self::project($this->rows('logs', $id), $after['logs']));
        $recorded_logs = self::clockless($after['logs']);
        $this->assertSame([$recorded_logs[0], ['id' => '2'] + $recorded_logs[5]], $logs);
    }

    // ---- pause -------------------------------------------------------------

    public function test_pause_running_then_not_running(): void
    {
        [$id, $go] = $this->both(fn (Connection $c): int => $this->builder($c, 'pr')->then('IncStep')->then('IncStep')->dispatch(['n' => 0]));

        Queuety::pause_workflow($id);
        $this->go('pause', $go);
        $this->assertSameRows($id, $go);
        $this->assertSame('paused', $this->row('workflows', $id)['status']);
        $this->assertSame('pending', $this->rows('jobs', $id)[0]['status'], 'the step already enqueued stays');
        $log = $this->last_log($id);
        $this->assertSame(['workflow_paused', '', 'default', null, null], [$log['event'], $log['handler'], $log['queue'], $log['job_id'], $log['step_index']]);

        // Not running: no change, logged all the same, no exception (the
        // plugin's pause(); the Go client reports "not running" after
        // writing the same rows).
        Queuety::pause_workflow($id);
        $this->assertGoRefused('pause', $go, "Workflow {$go} is not running.");
        $this->assertSameRows($id, $go);
        $this->assertSame(['workflow_started', 'workflow_paused', 'workflow_paused'], array_column($this->rows('logs', $id), 'event'));
        $this->assertSame('paused', $this->row('workflows', $id)['status']);
    }

    public function test_pause_leaves_completed_and_missing_workflows_alone(): void
    {
        $id = Queuety::workflow('done')->then('IncStep')->dispatch();
        $this->conn->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'completed' WHERE id = {$id}");
        Queuety::pause_workflow($id);
        $this->assertSame('completed', $this->row('workflows', $id)['status']);
        Queuety::pause_workflow(987654);
        $this->assertSame('workflow_paused', $this->last_log(987654)['event'], 'the plugin logs even for no workflow');
    }

    // ---- resume ------------------------------------------------------------

    public function test_resume_enqueues_the_current_step(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'pr')->then('IncStep')->then('IncStep')->then('IncStep')->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1);
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'paused' WHERE id = {$id}");
            // The step in flight when it paused finished; the next was not enqueued.
            $this->complete_step($c, $id, 1, 2, null, false);
            return $id;
        });

        Queuety::resume_workflow($id);
        $this->go('resume', $go);
        $this->assertSameRows($id, $go);
        $wf = $this->row('workflows', $id);
        $this->assertSame(['running', 2], [$wf['status'], $wf['current_step']]);
        $jobs = $this->rows('jobs', $id);
        $this->assertCount(3, $jobs);
        $this->assertSame(['IncStep', 2, 'pending', '{"__queuety_runtime":{"max_attempts":3}}'],
            [$jobs[2]['handler'], $jobs[2]['step_index'], $jobs[2]['status'], $jobs[2]['payload']]);
        $log = $this->last_log($id);
        $this->assertSame(['workflow_resumed', '', 'default'], [$log['event'], $log['handler'], $log['queue']]);

        $this->assertRefused("Workflow {$id} is not paused.", static fn () => Queuety::resume_workflow($id));
        $this->assertGoRefused('resume', $go, "Workflow {$go} is not paused.");
    }

    public function test_resume_a_parallel_step_enqueues_every_branch_with_the_workflow_defaults(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'par')->on_queue('briefs')->max_attempts(5)->then('IncStep')
                ->parallel(['BranchA', 'BranchB'])->then('IncStep')->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1, null, false);
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'paused' WHERE id = {$id}");
            return $id;
        });
        Queuety::resume_workflow($id);
        $this->go('resume', $go);
        $this->assertSameRows($id, $go);
        $jobs = array_slice($this->rows('jobs', $id), 1);
        $this->assertSame([['BranchA', 'briefs', 5, 1], ['BranchB', 'briefs', 5, 1]],
            array_map(static fn (array $j): array => [$j['handler'], $j['queue'], $j['max_attempts'], $j['step_index']], $jobs));
    }

    public function test_resume_refusals(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'end')->then('IncStep')->dispatch(['n' => 0]);
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'paused', current_step = 1 WHERE id = {$id}");
            return $id;
        });
        $before = $this->dump($this->conn, $id);
        $this->assertRefused("Workflow {$id} has no more steps.", static fn () => Queuety::resume_workflow($id));
        $this->assertGoRefused('resume', $go, "Workflow {$go} has no more steps.");
        $this->assertSame($before, $this->dump($this->conn, $id), 'rolled back, nothing written');
        $this->assertRefused('Workflow 987654 is not paused.', static fn () => Queuety::resume_workflow(987654));
    }

    // ---- retry -------------------------------------------------------------

    public function test_retry_enqueues_the_failed_step(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'retry')->then('IncStep')->then('Flaky')->then('IncStep')->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1);
            $this->fail_step($c, $id, 1, 'flaky');
            return $id;
        });
        $this->assertRefused("Workflow 987654 not found.", static fn () => Queuety::retry_workflow(987654));

        Queuety::retry_workflow($id);
        $this->go('retry', $go);
        $this->assertSameRows($id, $go);
        $wf = $this->row('workflows', $id);
        $this->assertSame(['running', 1, null, null], [$wf['status'], $wf['current_step'], $wf['failed_at'], $wf['error_message']]);
        $jobs = $this->rows('jobs', $id);
        $this->assertSame(['completed', 'buried', 'pending'], array_column($jobs, 'status'));
        $this->assertSame(['Flaky', 1], [$jobs[2]['handler'], $jobs[2]['step_index']]);
        $this->assertSame(['workflow_started', 'completed', 'buried', 'workflow_failed'], array_column($this->rows('logs', $id), 'event'), 'retry logs nothing');

        $this->assertRefused("Workflow {$id} is not in failed state.", static fn () => Queuety::retry_workflow($id));
        $this->assertGoRefused('retry', $go, "Workflow {$go} is not in failed state.");
    }

    /**
     * The plugin resolves a re-enqueued step's job options from the step
     * class's #[QueuetyStep] / config() as at dispatch; so does the
     * bridge. (The Go CLI cannot read PHP attributes: it would write the
     * workflow's max_attempts, 3, here.)
     */
    public function test_retry_applies_the_step_class_metadata(): void
    {
        require_once __DIR__ . '/fixtures/workflow-classes.php';
        $id = Queuety::workflow('meta')->then('IncStep')->then('FailingStep')->dispatch(['n' => 0]);
        $this->complete_step($this->conn, $id, 0, 1, null, false);
        (new Queue($this->conn))->dispatch(handler: 'FailingStep', payload: ['__queuety_runtime' => ['max_attempts' => 1]], max_attempts: 1, workflow_id: $id, step_index: 1);
        $this->fail_step($this->conn, $id, 1, 'always fails');
        Queuety::retry_workflow($id);
        $jobs = self::clockless($this->rows('jobs', $id));
        $this->assertSame(['FailingStep', '1', '{"__queuety_runtime":{"max_attempts":1}}', 'pending'],
            [$jobs[2]['handler'], $jobs[2]['max_attempts'], $jobs[2]['payload'], $jobs[2]['status']]);
        $this->assertSame(array_diff_key($jobs[1], ['id' => 1, 'status' => 1, 'attempts' => 1, 'failed_at' => 1, 'error_message' => 1]),
            array_diff_key($jobs[2], ['id' => 1, 'status' => 1, 'attempts' => 1, 'failed_at' => 1, 'error_message' => 1]), 'the same job as the first attempt');
    }

    public function test_resume_a_legacy_string_step(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'legacy')->then('IncStep')->then('IncStep')->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1, null, false);
            $this->edit_state($c, $id, static function (array $s): array {
                $s['_steps'] = ['IncStep', 'OldStep'];
                return $s;
            });
            $c->pdo()->exec("UPDATE " . self::P . "workflows SET status = 'paused' WHERE id = {$id}");
            return $id;
        });
        Queuety::resume_workflow($id);
        $this->go('resume', $go);
        $this->assertSameRows($id, $go);
        $this->assertSame('OldStep', $this->rows('jobs', $id)[1]['handler']);
    }

    public function test_retry_a_parallel_step_enqueues_every_branch(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'par')->parallel(['BranchA', 'Failing'])->then('IncStep')->dispatch(['n' => 0]);
            $c->pdo()->exec("UPDATE " . self::P . "jobs SET status = 'completed', attempts = 1 WHERE workflow_id = {$id} AND handler = 'BranchA'");
            $this->fail_step($c, $id, 0, 'always fails');
            return $id;
        });
        Queuety::retry_workflow($id);
        $this->go('retry', $go);
        $this->assertSameRows($id, $go);
        $pending = array_values(array_filter($this->rows('jobs', $id), static fn (array $j): bool => $j['status'] === 'pending'));
        $this->assertSame(['BranchA', 'Failing'], array_column($pending, 'handler'));
    }

    public function test_retry_a_for_each_step_keeps_its_results(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'fe')->for_each('items', 'FlakyItem')->then('IncStep')->dispatch(['items' => ['a', 'bad', 'c'], 'n' => 0]);
            $q = new Queue($c);
            $c->pdo()->exec("UPDATE " . self::P . "jobs SET status = 'completed', attempts = 1 WHERE workflow_id = {$id}");
            foreach (['a', 'bad', 'c'] as $i => $item) {
                $q->dispatch(handler: 'FlakyItem', payload: ['step_index' => 0, 'item' => $item, 'item_index' => $i], workflow_id: $id, step_index: 0, cost_units: 1);
            }
            $c->pdo()->exec("UPDATE " . self::P . "jobs SET status = 'completed', attempts = 1 WHERE workflow_id = {$id} AND id = 2");
            $this->edit_state($c, $id, static function (array $s): array {
                $s['_for_each_steps'] = [[
                    'initialized' => true, 'items' => ['a', 'bad', 'c'],
                    'results' => [['index' => 0, 'item' => 'a', 'output' => ['item' => 'a'], 'job_id' => 2]],
                    'failures' => [['index' => 1, 'item' => 'bad', 'error_message' => 'bad item', 'job_id' => 3]],
                    'winner_index' => 0, 'settled' => true,
                ]];
                return $s;
            });
            $this->fail_step($c, $id, 0, 'bad item');
            return $id;
        });
        Queuety::retry_workflow($id);
        $this->go('retry', $go);
        $this->assertSameRows($id, $go);

        $state = json_decode($this->row('workflows', $id)['state'], true);
        $runtime = $state['_for_each_steps'][0];
        $this->assertSame([], $runtime['failures']);
        $this->assertFalse($runtime['settled']);
        $this->assertCount(1, $runtime['results']);
        $this->assertStringContainsString('"failures":[],"winner_index":0,"settled":false}]', $this->row('workflows', $id)['state']);
        $last = $this->rows('jobs', $id)[4];
        $this->assertSame(['__queuety_for_each', 'pending', 0, '{"step_index":0,"__queuety_runtime":{"max_attempts":3}}'],
            [$last['handler'], $last['status'], $last['cost_units'], $last['payload']]);
    }

    public function test_retry_refused_once_compensated(): void
    {
        [$id, $go] = $this->both(function (Connection $c): int {
            $id = $this->builder($c, 'comp')->then('IncStep')->compensate_with('LifecycleUndo')->then('Failing')->compensate_on_failure()->dispatch(['n' => 0]);
            $this->complete_step($c, $id, 0, 1, 'LifecycleUndo');
            $this->fail_step($c, $id, 1, 'always fails');
            $this->edit_state($c, $id, static function (array $s): array {
                $s['_compensated'] = true;
                $s['_compensation_cause'] = 'failure';
                return $s;
            });
            return $id;
        });
        $before = $this->dump($this->conn, $id);
        $this->assertRefused("Workflow {$id} has already been compensated and cannot be retried.", static fn () => Queuety::retry_workflow($id));
        $this->assertGoRefused('retry', $go, "Workflow {$go} has already been compensated and cannot be retried.");
        $this->assertSame($before, $this->dump($this->conn, $id));
    }

    // ---- helpers -----------------------------------------------------------

    private function builder(Connection $c, string $name): WorkflowBuilder
    {
        return new WorkflowBuilder($name, $c, new Queue($c));
    }

    /**
     * Run $setup on this test's database and on a fresh twin; the ids it
     * returns must be the same on both.
     *
     * @template T
     * @param \Closure(Connection): T $setup
     * @return array{T, T}
     */
    private function both(\Closure $setup): array
    {
        if ($this->twin === null) {
            $this->twin = $this->database . '_go';
            self::admin_pdo()->exec("CREATE DATABASE `{$this->twin}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
            QueuetyBinary::exec(['migrate', '--dsn', $this->dsn($this->twin)]);
            $this->twin_conn = new Connection(self::env('HOST', '127.0.0.1') . ':' . self::env('PORT', '3306'), $this->twin,
                self::env('USER', 'root'), self::env('PASSWORD', ''), 'wp_');
        }
        $mine = $setup($this->conn);
        $theirs = $setup($this->twin_conn);
        $this->assertSame($mine, $theirs, 'the twin has the same ids');
        $this->assertSame($this->dump_all($this->conn), $this->dump_all($this->twin_conn), 'the same rows before the operation');
        return [$mine, $theirs];
    }

    /**
     * `queuety workflow <op> <id>` on the twin database.
     */
    private function go(string $op, int $id): string
    {
        $args = ['workflow', $op, (string) $id, '--dsn', $this->dsn((string) $this->twin)];
        if ($op === 'cancel') {
            // Its compensations and on_cancel are PHP classes: they run in
            // a pool started for the command (without one it refuses).
            $args = array_merge($args, ['--php-workers', '1', '--php', sprintf('%s %s/bin/queuety-php-worker --bootstrap %s/fixtures/lifecycle-classes.php', PHP_BINARY, dirname(__DIR__), __DIR__)]);
        }
        return QueuetyBinary::exec($args);
    }

    private function assertGoRefused(string $op, int $id, string $message): void
    {
        try {
            $this->go($op, $id);
        } catch (\RuntimeException $e) {
            $this->assertStringContainsString($message, $e->getMessage());
            return;
        }
        $this->fail("queuety workflow {$op} {$id} succeeded");
    }

    private function assertRefused(string $message, \Closure $call): void
    {
        try {
            $call();
        } catch (\RuntimeException $e) {
            $this->assertSame(\RuntimeException::class, $e::class);
            $this->assertSame($message, $e->getMessage());
            $this->assertFalse($this->conn->pdo()->inTransaction());
            return;
        }
        $this->fail("no exception; expected: {$message}");
    }

    private function assertSameRows(int $mine, int $theirs): void
    {
        $this->assertSame($mine, $theirs);
        $this->assertSame($this->dump_all($this->twin_conn), $this->dump_all($this->conn), 'the rows the Go engine wrote');
    }

    /**
     * Every row of the workflow tables, clocks as "set"/null.
     *
     * @return array<string, list<array<string, mixed>>>
     */
    private function dump_all(?Connection $c): array
    {
        self::assertNotNull($c);
        $out = [];
        foreach (['workflows', 'jobs', 'logs', 'workflow_events', 'workflow_dependencies', 'signals'] as $table) {
            $out[$table] = self::clockless($c->pdo()->query('SELECT * FROM ' . self::P . "{$table} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC));
        }
        return $out;
    }

    /**
     * @return array<string, list<array<string, mixed>>>
     */
    private function dump(Connection $c, int $workflow_id): array
    {
        $out = [];
        foreach (['workflows' => 'id', 'jobs' => 'workflow_id', 'logs' => 'workflow_id'] as $table => $column) {
            $out[$table] = $c->pdo()->query('SELECT * FROM ' . self::P . "{$table} WHERE {$column} = {$workflow_id} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
        }
        return $out;
    }

    /**
     * $rows with only the columns of $like's first row, in its order.
     *
     * @param list<array<string, mixed>> $rows
     * @param list<array<string, mixed>> $like
     * @return list<array<string, mixed>>
     */
    private static function project(array $rows, array $like): array
    {
        $columns = array_keys($like[0] ?? []);
        return array_map(static function (array $row) use ($columns): array {
            $out = [];
            foreach ($columns as $c) {
                $out[$c] = $row[$c] ?? null;
            }
            return $out;
        }, $rows);
    }

    /**
     * Rows with every *_at column as "set" or null, values as strings
     * (PDO's and the fixtures' types differ).
     *
     * @param list<array<string, mixed>> $rows
     * @return list<array<string, mixed>>
     */
    private static function clockless(array $rows): array
    {
        return array_map(static function (array $row): array {
            foreach ($row as $column => $value) {
                if (str_ends_with((string) $column, '_at')) {
                    $row[$column] = $value === null ? null : 'set';
                } elseif ($value !== null) {
                    $row[$column] = (string) $value;
                }
            }
            return $row;
        }, $rows);
    }

    /**
     * What the runtime leaves when step $index completed: its job(s)
     * completed, the state's n set, a compensation snapshot pushed, and
     * (with $enqueue_next) the next step's job enqueued.
     */
    private function complete_step(Connection $c, int $id, int $index, int $n, ?string $compensation = null, bool $enqueue_next = true): void
    {
        $pdo = $c->pdo();
        $pdo->exec("UPDATE " . self::P . "jobs SET status = 'completed', attempts = 1, reserved_at = NOW(), completed_at = NOW()
            WHERE workflow_id = {$id} AND step_index = {$index}");
        $this->edit_state($c, $id, static function (array $s) use ($n, $compensation, $index): array {
            $s['n'] = $n;
            if ($compensation !== null) {
                $stack = $s['_compensation_stack'] ?? [];
                $stack[] = ['step_index' => $index, 'handler' => $compensation, 'payload' => [], 'state' => ['n' => $n]];
                $s['_compensation_stack'] = $stack;
            }
            return $s;
        });
        $next = $index + 1;
        $pdo->exec("UPDATE " . self::P . "workflows SET current_step = {$next} WHERE id = {$id}");
        $pdo->exec("INSERT INTO " . self::P . "logs (workflow_id, step_index, handler, queue, event) VALUES ({$id}, {$index}, 'IncStep', 'default', 'completed')");
        if ($enqueue_next) {
            (new Queue($c))->dispatch(handler: 'IncStep', payload: ['__queuety_runtime' => ['max_attempts' => 3]], workflow_id: $id, step_index: $next);
        }
    }

    /**
     * What Workflow::fail leaves: the step's active jobs buried, the
     * workflow failed with the message, workflow_failed logged.
     */
    private function fail_step(Connection $c, int $id, int $index, string $message): void
    {
        $pdo = $c->pdo();
        $pdo->prepare("UPDATE " . self::P . "jobs SET status = 'buried', attempts = max_attempts, failed_at = NOW(), error_message = ?
            WHERE workflow_id = ? AND step_index = ? AND status IN ('pending', 'processing')")->execute([$message, $id, $index]);
        $pdo->prepare("UPDATE " . self::P . "workflows SET status = 'failed', failed_at = NOW(), error_message = ? WHERE id = ?")->execute([$message, $id]);
        $pdo->prepare("INSERT INTO " . self::P . "logs (job_id, workflow_id, handler, queue, event, error_message) VALUES (NULL, ?, 'x', 'default', 'buried', ?)")
            ->execute([$id, $message]);
        $pdo->prepare("INSERT INTO " . self::P . "logs (job_id, workflow_id, handler, queue, event, error_message) VALUES (0, ?, '', 'default', 'workflow_failed', ?)")
            ->execute([$id, $message]);
    }

    /**
     * @param \Closure(array<string, mixed>): array<string, mixed> $edit
     */
    private function edit_state(Connection $c, int $id, \Closure $edit): void
    {
        $table = self::P . 'workflows';
        $state = json_decode((string) $c->pdo()->query("SELECT state FROM {$table} WHERE id = {$id}")->fetchColumn(), true);
        $c->pdo()->prepare("UPDATE {$table} SET state = ? WHERE id = ?")->execute([json_encode($edit($state), JSON_THROW_ON_ERROR), $id]);
    }

    /**
     * @param array<string, mixed> $row
     */
    private function insert(string $table, array $row): void
    {
        $columns = array_keys($row);
        $this->conn->pdo()->prepare('INSERT INTO ' . self::P . $table . ' (' . implode(', ', $columns) . ') VALUES ('
            . implode(', ', array_fill(0, count($columns), '?')) . ')')->execute(array_values($row));
    }

    /**
     * @return array<string, mixed>
     */
    private function row(string $table, int $id): array
    {
        $row = $this->conn->pdo()->query('SELECT * FROM ' . self::P . "{$table} WHERE id = {$id}")->fetch(PDO::FETCH_ASSOC);
        $this->assertIsArray($row, "{$table} {$id}");
        return $row;
    }

    /**
     * @return list<array<string, mixed>>
     */
    private function rows(string $table, int $workflow_id): array
    {
        return $this->conn->pdo()->query('SELECT * FROM ' . self::P . "{$table} WHERE workflow_id = {$workflow_id} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
    }

    /**
     * @return list<array<string, mixed>>
     */
    private function all(string $table): array
    {
        return $this->conn->pdo()->query('SELECT * FROM ' . self::P . "{$table} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
    }

    /**
     * @return array<string, mixed>
     */
    private function last_log(int $workflow_id): array
    {
        $logs = $this->rows('logs', $workflow_id);
        $this->assertNotEmpty($logs);
        return $logs[count($logs) - 1];
    }

    private function dsn(string $database): string
    {
        $password = self::env('PASSWORD', '');
        return sprintf('%s%s@tcp(%s:%s)/%s', self::env('USER', 'root'), $password === '' ? '' : ':' . $password,
            self::env('HOST', '127.0.0.1'), self::env('PORT', '3306'), $database);
    }

    private static function admin_pdo(): PDO
    {
        return new PDO(sprintf('mysql:host=%s;port=%s;charset=utf8mb4', self::env('HOST', '127.0.0.1'), self::env('PORT', '3306')),
            self::env('USER', 'root'), self::env('PASSWORD', ''), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    }

    private static function env(string $name, string $default): string
    {
        $v = getenv('QUEUETY_TEST_DB_' . $name);
        return is_string($v) && $v !== '' ? $v : $default;
    }
}
