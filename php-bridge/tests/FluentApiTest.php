<?php

declare(strict_types=1);

namespace Queuety\Tests;

use PDO;
use Queuety\BatchBuilder;
use Queuety\ChainBuilder;
use Queuety\Enums\ForEachMode;
use Queuety\Enums\OverlapPolicy;
use Queuety\Enums\Priority;
use Queuety\Enums\StateMachineStatus;
use Queuety\Enums\WaitMode;
use Queuety\PendingJob;
use Queuety\PendingSchedule;
use Queuety\Queuety;
use Queuety\StateMachineBuilder;
use Queuety\Tests\Fluent\CountingHandler;
use Queuety\Tests\Fluent\CountingJob;
use Queuety\Tests\Support\DatabaseTestCase;
use Queuety\WorkflowBuilder;

require_once __DIR__ . '/fixtures/fluent-classes.php';
require_once __DIR__ . '/fixtures/callback-classes.php';

/**
 * Every public method of the plugin's facade and builders (the 202 of
 * fixtures/plugin-api.json) called against MariaDB without WordPress,
 * each with an assertion on what it wrote or read. Calls go through
 * call()/on()/make(), which record the method, so
 * test_every_plugin_method_is_called proves all 202 ran.
 */
final class FluentApiTest extends DatabaseTestCase
{
    /** @var array<string, true> "Class::method" of each call made */
    private array $called = [];

    public function test_jobs_and_queues(): void
    {
        $this->jobs_and_queues();
    }

    public function test_batches_chains_logs_and_metrics(): void
    {
        $this->batches_chains_logs_and_metrics();
    }

    public function test_workers_run_the_daemon(): void
    {
        $this->workers();
    }

    public function test_workflows(): void
    {
        $this->workflows();
    }

    public function test_workflow_history(): void
    {
        $this->workflow_history();
    }

    public function test_schedules_webhooks_and_services(): void
    {
        $this->schedules_webhooks_and_services();
    }

    public function test_machines(): void
    {
        $this->machines();
    }

    public function test_what_needs_wordpress_says_so(): void
    {
        $this->needs_wordpress();
    }

    public function test_cli_command_map_resolves_to_calls_that_run_here(): void
    {
        $this->cli_map();
    }

    public function test_fake_records_instead_of_writing(): void
    {
        $this->fake();
    }

    public function test_every_plugin_method_is_called(): void
    {
        $this->jobs_and_queues();
        $this->batches_chains_logs_and_metrics();
        $this->workers();
        $this->workflows();
        $this->workflow_history();
        $this->schedules_webhooks_and_services();
        $this->machines();
        $this->needs_wordpress();
        $this->cli_map();
        $this->fake();

        $want = [];
        $api = json_decode((string) file_get_contents(__DIR__ . '/fixtures/plugin-api.json'), true, 512, JSON_THROW_ON_ERROR);
        foreach ($api['classes'] as $class => $methods) {
            foreach ($methods as $m) {
                $want[] = "{$class}::{$m['name']}";
            }
        }
        $this->assertCount(202, $want);
        $this->assertSame([], array_values(array_diff($want, array_keys($this->called))), 'plugin methods never called');
    }

    private function jobs_and_queues(): void
    {
        $pending = $this->on($this->call('dispatch', 'mail', ['to' => 'a@b.c']), 'on_queue', 'mail');
        $this->on($pending, 'with_priority', Priority::High);
        $this->on($pending, 'delay', 60);
        $this->on($pending, 'max_attempts', 5);
        $this->on($pending, 'rate_limit', 10, 60);
        $this->on($pending, 'unique');
        $this->on($pending, 'concurrency_group', 'smtp', 2);
        $this->on($pending, 'cost_units', 3);
        $this->assertNull($this->on($pending, 'get_job_instance'));
        $first = $this->on($pending, 'id');
        $row = $this->job($first);
        $this->assertSame(['mail', 'mail', '{"to":"a@b.c"}', '2', '5', 'smtp', '2', '3'],
            [$row['queue'], $row['handler'], $row['payload'], $row['priority'], $row['max_attempts'], $row['concurrency_group'], $row['concurrency_limit'], $row['cost_units']]);

        $after = $this->make(PendingJob::class, 'noop', ['step' => 2], Queuety::queue());
        $this->on($after, 'after', $first);
        $this->on($after, 'in_batch', 0);
        $this->on($after, '__destruct');
        $this->assertSame((string) $first, $this->job($first + 1)['depends_on'], '__destruct writes the row');

        $job = new CountingJob(2);
        $this->assertSame($job, $this->call('dispatch', $job)->get_job_instance());
        $by_cli = $this->call('dispatch_job', 'noop', ['x' => 1], 'cli', 99, 0);
        $this->assertSame(['cli', '0'], [$this->job($by_cli)['queue'], $this->job($by_cli)['priority']], 'an invalid priority is Low');

        CountingJob::$runs = 0;
        $this->call('dispatch_sync', new CountingJob(3));
        $this->call('dispatch_sync', CountingJob::class, ['n' => 4]);
        $this->assertSame(7, CountingJob::$runs);
        CountingHandler::$runs = 0;
        $this->call('register', 'count', CountingHandler::class);
        $this->call('dispatch_sync', 'count', []);
        $this->assertSame(1, CountingHandler::$runs);
        $this->assertSame(CountingHandler::class, $this->call('registry')->class_name('count'));

        $ids = $this->call('batch', [['handler' => 'a', 'payload' => ['i' => 1]], ['handler' => 'b', 'queue' => 'bulk', 'priority' => Priority::Urgent]]);
        $this->assertCount(2, $ids);
        $this->assertSame(['a', 'b'], [$this->job($ids[0])['handler'], $this->job($ids[1])['handler']]);
        $this->assertSame('3', $this->job($ids[1])['priority']);

        $listed = $this->call('list_jobs', 'bulk', 'pending', 10);
        $this->assertSame([$ids[1]], array_map('intval', array_column($listed, 'id')));
        $this->assertSame(['id', 'queue', 'handler', 'status', 'attempts', 'priority', 'created_at'], array_keys($listed[0]));

        $this->call('bury_job', $ids[0]);
        $inspected = $this->call('inspect_job', $ids[0]);
        $this->assertSame('buried', $inspected['job']['status']);
        $this->assertSame('Manually buried via CLI.', $inspected['job']['error_message']);
        $this->assertSame([], $inspected['logs']);
        $this->assertNull($this->call('inspect_job', 999999));
        $this->assertSame([$ids[0]], array_map(static fn ($j) => $j->id, $this->call('buried')));
        $this->call('retry', $ids[0]);
        $this->assertSame('pending', $this->job($ids[0])['status']);
        $this->call('bury_job', $ids[0], 'again');
        $this->call('bury_job', $ids[1], 'again');
        $this->assertSame(2, $this->call('retry_buried'));
        $this->assertSame([], $this->call('buried', 'bulk'));

        $this->assertTrue($this->call('delete_job', $ids[1]));
        $this->assertFalse($this->call('delete_job', $ids[1]));

        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'completed', completed_at = UTC_TIMESTAMP() - INTERVAL 10 DAY WHERE id = {$ids[0]}");
        $this->assertSame(0, $this->call('purge', 30), 'a 10-day-old job is kept at 30 days');
        $this->assertSame(1, $this->call('purge'), 'the default (7 days) takes it');

        $this->call('pause', 'mail');
        $this->assertTrue($this->call('is_paused', 'mail'));
        $this->call('resume', 'mail');
        $this->assertFalse($this->call('is_paused', 'mail'));
        $this->assertSame(1, $this->call('stats', 'mail')['pending']);
        $this->assertSame($this->conn, $this->call('connection'));
        $this->assertInstanceOf(\Queuety\Queue::class, $this->call('queue'));
    }

    private function batches_chains_logs_and_metrics(): void
    {
        $builder = $this->make(BatchBuilder::class, [['handler' => 'a'], ['handler' => 'b']], $this->conn, Queuety::queue());
        $this->on($builder, 'name', 'import');
        $this->on($builder, 'on_queue', 'bulk');
        $this->on($builder, 'then', 'ThenHandler');
        $this->on($builder, 'catch', 'CatchHandler');
        $this->on($builder, 'finally', 'FinallyHandler');
        $this->on($builder, 'allow_failures');
        $batch = $this->on($builder, 'dispatch');
        $found = $this->call('find_batch', $batch->id);
        $this->assertSame(['import', 2, 2], [$found?->name, $found?->total_jobs, $found?->pending_jobs]);
        $this->assertNull($this->call('batch_manager')->find(999999));
        $this->assertNotNull($this->call('create_batch', [['handler' => 'c']])->dispatch());

        $chain = $this->make(ChainBuilder::class, [['handler' => 'one'], ['handler' => 'two']], Queuety::queue());
        $this->on($chain, 'on_queue', 'chained');
        $this->on($chain, 'catch', 'ChainFailed');
        $head = $this->on($chain, 'dispatch');
        $this->assertSame('chained', $this->job($head)['queue']);
        $this->assertSame((string) $head, $this->job($head + 1)['depends_on']);
        $this->assertGreaterThan(0, $this->call('chain', [['handler' => 'x']])->dispatch());

        $logger = $this->call('logger');
        $logger->log(\Queuety\Enums\LogEvent::Completed, ['job_id' => $head, 'handler' => 'one', 'duration_ms' => 10]);
        $logger->log(\Queuety\Enums\LogEvent::Completed, ['job_id' => $head, 'handler' => 'one', 'duration_ms' => 30]);
        $logger->log(\Queuety\Enums\LogEvent::Failed, ['job_id' => $head + 1, 'handler' => 'two', 'error_message' => 'boom']);
        $this->assertCount(2, $this->call('query_logs', ['job_id' => $head]));
        $this->assertCount(1, $this->call('query_logs', ['handler' => 'two']));
        $this->assertCount(1, $this->call('query_logs', ['event' => 'failed']));
        $this->assertSame([], $this->call('query_logs', ['event' => 'nonsense']));
        $this->assertCount(3, $this->call('query_logs', ['since' => '-1 hour']));
        $this->assertCount(3, $this->call('query_logs'));

        $stats = array_column($this->call('handler_metrics', 60), null, 'handler');
        $this->assertSame(['handler' => 'one', 'completed' => 2, 'failed' => 0, 'avg_ms' => 20.0, 'p95_ms' => 30.0, 'error_rate' => 0.0], $stats['one']);
        $this->assertSame(1.0, $stats['two']['error_rate']);
        $this->assertEqualsWithDelta(1 / 3, $this->call('metrics')->error_rate(null, 60), 1e-9);

        $this->conn->pdo()->exec('UPDATE wp_queuety_logs SET created_at = UTC_TIMESTAMP() - INTERVAL 3 DAY WHERE handler = \'two\'');
        $this->assertSame(1, $this->call('purge_logs', 2));
        $this->assertCount(2, $this->call('query_logs'));
    }

    private function workers(): void
    {
        // run_worker and the pools run until stopped: a stand-in binary
        // records the daemon command line they start.
        $record = tempnam(sys_get_temp_dir(), 'qtargs');
        $script = tempnam(sys_get_temp_dir(), 'qtbin');
        file_put_contents($script, "#!/bin/sh\nprintf '%s %s\\n' \"\$QUEUETY_DSN\" \"\$*\" >> " . escapeshellarg($record) . "\n");
        chmod($script, 0o755);
        $real = (string) getenv('QUEUETY_BIN');
        putenv("QUEUETY_BIN={$script}");
        try {
            $this->call('run_worker', ['mail', 'default'], true);
            $this->call('run_worker_pool', 3, 'mail');
            $this->call('run_auto_scaling_worker_pool', 1, 5, 'mail');
        } finally {
            putenv("QUEUETY_BIN={$real}");
        }
        $lines = file($record, FILE_IGNORE_NEW_LINES);
        unlink($record);
        unlink($script);
        // The DSN (with the password) in the environment, not the arguments.
        $prefix = sprintf('%s --prefix wp_ --table-prefix queuety_ ', $this->go_dsn());
        $this->assertSame([
            $prefix . 'work --queue mail,default --once',
            $prefix . 'work --queue mail --workers 3',
            $prefix . 'work --queue mail --min-workers 1 --max-workers 5',
        ], $lines);
        try {
            $this->call('run_auto_scaling_worker_pool', 4, 2);
            $this->fail('min above max is refused');
        } catch (\InvalidArgumentException $e) {
            $this->assertStringContainsString('min_workers <= max_workers', $e->getMessage());
        }

        // flush and recover run the real daemon on this database.
        $root = dirname(__DIR__, 2);
        putenv(sprintf('QUEUETY_PHP=%s %s/php-bridge/bin/queuety-php-worker --bootstrap %s/php-bridge/tests/fixtures/fluent-app.php', PHP_BINARY, $root, $root));
        putenv('QUEUETY_PHP_WORKERS=1');
        try {
            $a = Queuety::dispatch(CountingHandler::class)->on_queue('flush')->id();
            $b = Queuety::dispatch(CountingHandler::class)->on_queue('flush')->id();
            $flushed = $this->call('flush_queue', 'flush');
        } finally {
            putenv('QUEUETY_PHP');
            putenv('QUEUETY_PHP_WORKERS');
        }
        $done = (int) $this->conn->pdo()->query("SELECT COUNT(*) FROM wp_queuety_jobs WHERE queue = 'flush' AND status = 'completed'")->fetchColumn();
        $this->assertSame(2, $flushed, "flush runs both PHP jobs and prints their count");
        $this->assertSame(2, $done, "both PHP jobs completed");

        $stale = Queuety::dispatch('stale')->on_queue('stale')->id();
        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'processing', attempts = 1, reserved_at = UTC_TIMESTAMP() - INTERVAL 1 DAY WHERE id = {$stale}");
        $this->assertSame(1, $this->call('recover_stale_jobs'));
        $this->assertSame('pending', $this->job($stale)['status']);
        $this->assertInstanceOf(\Queuety\Worker::class, $this->call('worker'));
    }

    private function workflows(): void
    {
        $child = new WorkflowBuilder('child');
        $child->then('ChildStep');
        $b = $this->make(WorkflowBuilder::class, 'everything', $this->conn, Queuety::queue());
        $this->on($b, 'then', 'StepA', 'a');
        $this->on($b, 'parallel', ['P1', 'P2']);
        $this->on($b, 'for_each', 'items', 'ItemStep', 'results', ForEachMode::Quorum, 1, null, 'each');
        $this->on($b, 'repeat_while', 'a', 'again', true, 'loop', null, 3);
        $this->on($b, 'repeat_until', 'a', 'done', true, 'until', null, 3);
        $this->on($b, 'run_workflow', 'child', $child);
        $this->on($b, 'delay', 5);
        $this->on($b, 'wait_for_signal', 'go');
        $this->on($b, 'wait_for_signals', ['x', 'y'], WaitMode::Any);
        $this->on($b, 'wait_for_approval');
        $this->on($b, 'wait_for_decision');
        $this->on($b, 'wait_for_input');
        $this->on($b, 'wait_for_workflow', 1);
        $this->on($b, 'wait_for_workflows', [1, 2]);
        $this->on($b, 'wait_for_workflow_group', 'g');
        $this->on($b, 'start_workflows', 'items', $child, 'started', 'item', true, 'start', 'g');
        $this->on($b, 'start_agents', 'tasks', $child);
        $this->on($b, 'wait_for_agents');
        $this->on($b, 'wait_for_agent_group');
        $this->on($b, 'compensate_with', 'Undo');
        $this->on($b, 'compensate_on_failure');
        $this->on($b, 'on_cancel', 'OnCancel');
        $this->on($b, 'prune_state_after', 3);
        $this->on($b, 'must_complete_within', 0, 0, 1);
        $this->on($b, 'on_deadline', 'OnDeadline');
        $this->on($b, 'version', 'v2');
        $this->on($b, 'idempotency_key', 'everything-1');
        $this->on($b, 'max_transitions', 100);
        $this->on($b, 'max_for_each_items', 10);
        $this->on($b, 'max_state_bytes', 100000);
        $this->on($b, 'max_cost_units', 50);
        $this->on($b, 'max_started_workflows', 5);
        $this->on($b, 'on_queue', 'wf');
        $this->on($b, 'with_priority', Priority::High);
        $this->on($b, 'max_attempts', 4);
        $this->assertSame(['everything', 'wf', Priority::High, 4], [$this->on($b, 'get_name'), $this->on($b, 'get_queue'), $this->on($b, 'get_priority'), $this->on($b, 'get_max_attempts')]);
        $this->assertCount(19, $this->on($b, 'build_steps'));
        $this->assertSame('v2', $this->on($b, 'build_runtime_definition')['definition_version']);
        $wf = $this->on($b, 'dispatch', ['items' => [1, 2]]);
        $this->assertSame($wf, $b->dispatch(['items' => [3]]), 'the idempotency key dispatches once');
        $this->assertSame('StepA', $this->job((int) $this->conn->pdo()->query("SELECT id FROM wp_queuety_jobs WHERE workflow_id = {$wf}")->fetchColumn())['handler']);

        $this->call('register_workflow_template', $this->call('define_workflow', 'tpl')->then('T1')->then('T2')->on_queue('tq'));
        $this->assertTrue($this->call('workflow_templates')->has('tpl'));
        $from_template = $this->call('run_workflow', 'tpl', ['k' => 'v']);
        $status = $this->call('workflow_status', $from_template);
        $this->assertSame(['tpl', 2, ['k' => 'v']], [$status?->name, $status?->total_steps, $status?->state]);
        $this->assertSame('tq', $this->job((int) $this->conn->pdo()->query("SELECT id FROM wp_queuety_jobs WHERE workflow_id = {$from_template}")->fetchColumn())['queue']);
        $definition = Queuety::workflow('tpl')->then('T1')->then('T2')->on_queue('tq')->on_cancel('Undo')->version('v3')->build_runtime_definition();
        $direct = $this->call('dispatch_workflow_definition', $definition, ['k' => 'v'], ['idempotency_key' => ' tpl-1 ']);
        $state = json_decode((string) $this->conn->pdo()->query("SELECT state FROM wp_queuety_workflows WHERE id = {$direct}")->fetchColumn(), true);
        // The plugin's materialized state: its key order, handlers as {class, payload}, the key trimmed.
        $this->assertSame(['k', '_steps', '_queue', '_priority', '_max_attempts', '_on_cancel', '_definition_version', '_definition_hash', '_idempotency_key'], array_keys($state));
        $this->assertSame(['tq', ['class' => 'Undo', 'payload' => []], 'v3', $definition['definition_hash'], 'tpl-1'],
            [$state['_queue'], $state['_on_cancel'], $state['_definition_version'], $state['_definition_hash'], $state['_idempotency_key']]);
        $this->assertSame($direct, Queuety::dispatch_workflow_definition($definition, [], ['idempotency_key' => 'tpl-1']), 'the key dispatches once');
        try {
            $this->call('run_workflow', 'nope');
            $this->fail('an unregistered template throws');
        } catch (\RuntimeException $e) {
            $this->assertSame("Workflow template 'nope' is not registered.", $e->getMessage());
        }
        $this->assertSame(1, $this->call('load_workflows', __DIR__ . '/fixtures/workflows'));
        $this->assertSame('onboard', $this->call('load_workflow_file', __DIR__ . '/fixtures/workflows/onboard.php')?->name);
        $this->assertNull($this->call('load_workflow_file', __DIR__ . '/fixtures/workflows/not-a-workflow.php'));

        $this->assertSame([$direct, $from_template, $wf], array_map(static fn ($s) => $s->workflow_id, $this->call('list_workflows', 'running', 3)));
        $this->assertSame([], $this->call('list_workflows', 'completed'));

        $this->call('signal', $wf, 'go', ['a' => 1]);
        $this->call('approve_workflow', $wf, ['by' => 'x']);
        $this->call('reject_workflow', $wf);
        $this->call('submit_workflow_input', $wf, ['v' => 2]);
        $signals = $this->conn->pdo()->query("SELECT signal_name FROM wp_queuety_signals WHERE workflow_id = {$wf} ORDER BY id")->fetchAll(PDO::FETCH_COLUMN);
        $this->assertSame(['go', 'approval', 'rejected', 'input'], $signals);

        $this->call('put_artifact', $wf, 'report', ['rows' => 3]);
        $this->assertSame(['rows' => 3], $this->call('workflow_artifact', $wf, 'report')['content']);
        $this->assertCount(1, $this->call('workflow_artifacts', $wf, true));
        $this->call('delete_workflow_artifact', $wf, 'report');
        $this->assertSame([], $this->call('artifacts')->list($wf));
        $this->assertNull($this->call('current_workflow_id'));
        $this->assertNull($this->call('current_step_index'));
        try {
            $this->call('put_current_artifact', 'x', 1);
            $this->fail('outside a step there is no current workflow');
        } catch (\RuntimeException $e) {
            $this->assertSame('No workflow is currently executing.', $e->getMessage());
        }
        $this->call('trace_input', ['in' => 1]);
        $this->call('trace_output', ['out' => 2]);
        $this->call('trace_context', ['ctx' => 3]);
        $this->assertSame(['in' => 1], \Queuety\Bridge\Trace::consume()['input'] ?? null);

        $this->call('pause_workflow', $direct);
        $this->assertSame('paused', $this->call('workflow_manager')->status($direct)?->status->value);
        $this->call('resume_workflow', $direct);
        $this->assertSame('running', Queuety::workflow_status($direct)?->status->value);
        $this->call('cancel_workflow', $direct);
        $this->assertSame('cancelled', Queuety::workflow_status($direct)?->status->value);
        $this->conn->pdo()->exec("UPDATE wp_queuety_workflows SET status = 'failed' WHERE id = {$from_template}");
        $this->call('retry_workflow', $from_template);
        $this->assertSame('running', Queuety::workflow_status($from_template)?->status->value);
        $this->assertInstanceOf(WorkflowBuilder::class, $this->call('workflow', 'plain'));
    }

    private function workflow_history(): void
    {
        $wf = Queuety::workflow('three')->then('S0')->then('S1')->then('S2')->dispatch(['n' => 0]);
        // What a worker records as the steps complete: step 0 with n = 1,
        // then the workflow moves to step 1.
        $events = $this->call('workflow_events');
        $events->record_event(['workflow_id' => $wf, 'step_index' => 0, 'step_name' => '0', 'step_type' => 'single', 'handler' => 'S0', 'event' => 'step_started', 'state_before' => ['n' => 0]]);
        $events->record_event(['workflow_id' => $wf, 'step_index' => 0, 'step_name' => '0', 'step_type' => 'single', 'handler' => 'S0', 'event' => 'step_completed', 'output' => ['n' => 1], 'state_after' => ['n' => 1]]);
        $state = json_decode((string) $this->conn->pdo()->query("SELECT state FROM wp_queuety_workflows WHERE id = {$wf}")->fetchColumn(), true);
        $state['n'] = 1;
        $this->conn->pdo()->prepare("UPDATE wp_queuety_workflows SET state = ?, current_step = 1 WHERE id = {$wf}")->execute([json_encode($state)]);
        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'completed' WHERE workflow_id = {$wf}");
        Queuety::queue()->dispatch(handler: 'S1', workflow_id: $wf, step_index: 1);

        $timeline = $this->call('workflow_timeline', $wf, 1, 1);
        $this->assertSame(['step_completed'], array_column($timeline, 'event'));
        $this->assertSame(['n' => 1], $timeline[0]['output']);
        $trace = $this->call('workflow_trace', $wf);
        $this->assertSame([0], array_column($trace['steps'], 'step_index'));
        $this->assertCount(2, $trace['jobs']);
        $this->assertSame(['n' => 1], $this->call('workflow_state_at', $wf, 0));
        $this->assertNull($this->call('workflow_state_at', $wf, 2));

        $export = $this->call('export_workflow', $wf);
        $this->assertSame(['three', 1, 3], [$export['workflow']['name'], $export['workflow']['current_step'], $export['workflow']['total_steps']]);
        $this->assertCount(2, $export['events']);
        $file = tempnam(sys_get_temp_dir(), 'qtexport');
        $this->assertSame($file, $this->call('export_workflow_to_file', $wf, $file));
        $replayed = $this->call('replay_workflow_file', $file);
        unlink($file);
        $again = $this->call('replay_workflow', $export);
        foreach ([$replayed, $again] as $id) {
            $s = Queuety::workflow_status($id);
            $this->assertStringStartsWith('three_replay_', (string) $s?->name);
            $this->assertSame([1, ['n' => 1]], [$s?->current_step, $s?->state]);
            $this->assertSame(['S1'], $this->conn->pdo()->query("SELECT handler FROM wp_queuety_jobs WHERE workflow_id = {$id}")->fetchAll(PDO::FETCH_COLUMN), 'its current step is enqueued');
            $this->assertSame(['step_started', 'step_completed', 'workflow_replayed'], array_column(Queuety::workflow_timeline($id, null), 'event'));
        }

        $fork = $this->call('fork_workflow', $wf);
        $this->assertStringStartsWith('three_fork_', (string) Queuety::workflow_status($fork)?->name);
        $this->assertSame(['S1'], $this->conn->pdo()->query("SELECT handler FROM wp_queuety_jobs WHERE workflow_id = {$fork}")->fetchAll(PDO::FETCH_COLUMN));

        $this->call('rewind_workflow', $wf, 0);
        $jobs = $this->conn->pdo()->query("SELECT handler, status, error_message FROM wp_queuety_jobs WHERE workflow_id = {$wf} ORDER BY id")->fetchAll(PDO::FETCH_NUM);
        $this->assertSame([['S0', 'completed', null], ['S1', 'buried', 'Superseded by workflow rewind'], ['S1', 'pending', null]], $jobs);
        $this->assertContains('workflow_rewound', array_column(Queuety::query_logs(['workflow_id' => $wf]), 'event'));
        $this->assertSame(['n' => 1], Queuety::workflow_status($wf)?->state);
        $this->assertSame(1, Queuety::workflow_status($wf)?->current_step);
        try {
            $this->call('rewind_workflow', $wf, 2);
            $this->fail('rewinding to an unrecorded step throws');
        } catch (\RuntimeException $e) {
            $this->assertSame("No recorded state found for workflow {$wf} at step 2.", $e->getMessage());
        }
    }

    private function schedules_webhooks_and_services(): void
    {
        $every = $this->make(PendingSchedule::class, 'report', ['k' => 1], Queuety::scheduler());
        $this->on($every, 'every', '1 hour');
        $this->on($every, 'on_queue', 'reports');
        $this->on($every, 'overlap', OverlapPolicy::Skip);
        $this->assertGreaterThan(0, $this->on($every, 'id'));
        $cron = $this->call('schedule', 'nightly');
        $this->on($cron, 'cron', '0 3 * * *');
        $this->on($cron, '__destruct');
        $handlers = array_map(static fn ($s) => $s->handler, $this->call('list_schedules'));
        sort($handlers);
        $this->assertSame(['nightly', 'report'], $handlers);
        $this->assertGreaterThan(0, $this->call('add_schedule', 'cli', [], 'default', '5 minutes', 'interval'));
        $this->assertTrue($this->call('remove_schedule', 'cli'));
        $this->assertSame(0, $this->call('run_scheduler'), 'nothing is due yet');
        $this->assertInstanceOf(\Queuety\Scheduler::class, $this->call('scheduler'));

        $hook = $this->call('register_webhook', 'job.completed', 'https://example.com/h');
        $this->assertSame([$hook], array_map('intval', array_column($this->call('list_webhooks'), 'id')));
        $this->call('remove_webhook', $hook);
        $this->assertSame([], $this->call('webhook_notifier')->list());

        $found = $this->call('discover_handlers_cli', __DIR__ . '/Discover', 'Queuety\\Tests\\Discover', false);
        $this->assertSame(['Queuety\\Tests\\Discover\\Greeter', 'Queuety\\Tests\\Discover\\Unnamed'], array_column($found['discovered'], 'class'));
        $this->assertSame([0, 'greet'], [$found['registered'], $found['discovered'][0]['name']]);
        $this->assertSame(1, $this->call('discover_handlers', __DIR__ . '/Discover', 'Queuety\\Tests\\Discover'));
        $this->assertSame('Queuety\\Tests\\Discover\\Greeter', Queuety::registry()->class_name('greet'));

        $limiter = $this->call('rate_limiter');
        $limiter->register('limited', 1, 60);
        $this->assertFalse($limiter->is_limited('limited'));
        Queuety::logger()->log(\Queuety\Enums\LogEvent::Completed, ['handler' => 'limited']);
        $this->assertTrue($limiter->is_limited('limited'));
        $this->assertSame($limiter, Queuety::rate_limiter());

        $busy = Queuety::dispatch('x')->concurrency_group('g', 2)->cost_units(4)->id();
        $this->conn->pdo()->exec("UPDATE wp_queuety_jobs SET status = 'processing' WHERE id = {$busy}");
        $resources = $this->call('resource_manager');
        $this->assertSame([1, 4, 0], [$resources->active_group_count('g'), $resources->active_group_cost_units('g'), $resources->active_group_count('g', $busy)]);

        $chunks = $this->call('chunk_store');
        $chunks->append_chunk($busy, 0, 'hel');
        $chunks->append_chunk($busy, 1, 'lo');
        $this->assertSame(['hello', 2], [$chunks->get_accumulated($busy), $chunks->chunk_count($busy)]);

        $cache = $this->call('cache');
        $cache->set('k', 1);
        $this->assertSame(1, Queuety::cache()->get('k'));
        $this->call('set_cache', new \Queuety\Cache\MemoryCache());
        $this->assertNull(Queuety::cache()->get('k'));

        $this->assertSame('queuety', $this->call('cli_command'));
        $rows = (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn();
        $this->call('ensure_schema');
        $this->assertSame($rows, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn(), 'ensure_schema migrates in place, keeping the rows');
    }

    private function machines(): void
    {
        $m = $this->make(StateMachineBuilder::class, 'door', $this->call('machines'));
        $this->on($m, 'initial', 'closed');
        $this->on($m, 'state', 'closed');
        $this->on($m, 'on', 'open', 'opened', \PublishGuard::class, 'opening');
        $this->on($m, 'state', 'opened');
        $this->on($m, 'action', ['class' => \DraftAction::class, 'payload' => ['p' => 1]]);
        $this->on($m, 'on', 'close', 'done');
        $this->on($m, 'state', 'done', StateMachineStatus::Completed);
        $this->on($m, 'on_queue', 'machines');
        $this->on($m, 'with_priority', Priority::Normal);
        $this->on($m, 'max_attempts', 2);
        $this->on($m, 'version', 'door.v1');
        $this->on($m, 'idempotency_key', 'door-1');
        $this->assertSame('door', $this->on($m, 'get_name'));
        $definition = $this->on($m, 'build_runtime_definition');
        $this->assertSame(['closed', 'door.v1', 64], [$definition['initial_state'], $definition['definition_version'], strlen($definition['definition_hash'])]);
        $id = $this->on($m, 'dispatch', ['who' => 'me']);
        $this->assertSame($id, $m->dispatch(), 'the key dispatches once');

        $this->call('machine_event', $id, 'open', ['approved' => true]);
        $status = $this->call('machine_status', $id);
        $this->assertSame([StateMachineStatus::Running, 'opened', 'DraftAction'], [$status?->status, $status?->current_state, $status?->current_action]);
        $action = $this->job((int) $this->conn->pdo()->query("SELECT id FROM wp_queuety_jobs WHERE handler = '__queuety_state_machine_action'")->fetchColumn());
        $this->assertSame(['machines', '1', '2', '{"machine_id":' . $id . ',"state_name":"opened","event_name":"open","event_payload":{"approved":true}}'],
            [$action['queue'], $action['priority'], $action['max_attempts'], $action['payload']]);

        $other = $this->call('dispatch_state_machine_definition', Queuety::machine('lamp')->state('off')->build_runtime_definition());
        $this->assertSame([$other, $id], array_column($this->call('list_machines'), 'id'));
        $events = array_column($this->call('machine_timeline', $id), 'event');
        $this->assertSame(['machine_started', 'machine_waiting', 'event_received', 'guard_started', 'guard_completed', 'transitioned', 'action_enqueued'], $events);
        $this->assertSame('opened', $this->call('machine_trace', $id)['machine']['current_state']);
        $last = (int) $this->conn->pdo()->query("SELECT MAX(id) FROM wp_queuety_state_machine_events WHERE machine_id = {$id}")->fetchColumn();
        $this->assertSame(['who' => 'me', 'approved' => true], $this->call('machine_state_at', $id, $last));
        $this->assertCount(7, $this->call('machine_events')->get_timeline($id, null));
        $this->assertInstanceOf(StateMachineBuilder::class, $this->call('machine', 'x'));
    }

    private function needs_wordpress(): void
    {
        foreach ([
            'on_action' => ['user_register', 'onboard'],
            'replace_wp_cron' => [],
            'restore_wp_cron' => [],
        ] as $method => $args) {
            try {
                $this->call($method, ...$args);
                $this->fail("Queuety::{$method}() returned without WordPress");
            } catch (\RuntimeException | \LogicException $e) {
                $this->assertMatchesRegularExpression('/needs WordPress|requires WordPress/', $e->getMessage(), $method);
            }
        }
    }

    private function cli_map(): void
    {
        $map = $this->call('cli_command_map');
        $this->assertCount(42, $map);
        $paths = array_map(static fn (array $d) => implode(' ', $d['cli_path']), $map);
        $this->assertSame(42, count(array_unique($paths)));
        $this->assertContains('workflow state-at', $paths);
        $export = $map[array_search('workflow export', $paths, true)];
        $this->assertSame(['workflow.export', ['class' => 'Queuety\\CLI\\WorkflowCommand', 'method' => 'export'], 'wp queuety workflow export'],
            [$export['operation'], $export['handler'], $export['wp_cli_command']]);
        $this->assertSame(['Queuety\\Queuety::export_workflow', 'Queuety\\Queuety::export_workflow_to_file'], array_column($export['targets'], 'callable'));
        foreach ($map as $d) {
            foreach ($d['targets'] as $t) {
                $this->assertTrue(is_callable($t['callable']), "{$t['callable']} exists here");
            }
        }

        $plan = $this->call('resolve_cli_command', 'wp queuety dispatch', ['send_mail'], ['payload' => '{"to":"a@b.c"}', 'queue' => 'mail', 'priority' => '2']);
        $this->assertSame(['Queuety\\Queuety::dispatch_job', ['send_mail', ['to' => 'a@b.c'], 'mail', 2, 0], 'php', false],
            [$plan['callable'], $plan['arguments'], $plan['transport'], $plan['needs_confirmation']]);
        $id = call_user_func_array($plan['callable'], $plan['arguments']);
        $this->assertSame(['send_mail', 'mail', '2'], [$this->job($id)['handler'], $this->job($id)['queue'], $this->job($id)['priority']], 'the plan runs here');

        $pool = Queuety::resolve_cli_command(['work'], [], ['min-workers' => '2', 'max-workers' => '6']);
        $this->assertSame(['Queuety\\Queuety::run_auto_scaling_worker_pool', [2, 6, 'default']], [$pool['callable'], $pool['arguments']]);
        $this->assertSame([['Queuety\\Queuety::run_worker', ['q', true]], ['Queuety\\Queuety::purge', [null]], ['Queuety\\Queuety::export_workflow_to_file', [5, '/tmp/x.json']],
            ['Queuety\\Queuety::query_logs', [['job_id' => null, 'workflow_id' => null, 'handler' => null, 'event' => null, 'since' => '-24 hours', 'limit' => 50]]],
            ['Queuety\\Queuety::add_schedule', ['h', [], 'default', '0 3 * * *', 'cron']], ['Queuety\\Queuety::workflow_state_at', [7, 2]],
            ['Queuety\\Queuety::workflow_artifacts', [7, false]]],
            array_map(static fn (array $p) => [$p['callable'], $p['arguments']], [
                Queuety::resolve_cli_command('work', [], ['queue' => 'q', 'once' => true]),
                Queuety::resolve_cli_command('purge'),
                Queuety::resolve_cli_command('workflow export', ['5'], ['output' => '/tmp/x.json']),
                Queuety::resolve_cli_command('log'),
                Queuety::resolve_cli_command('schedule add', ['h'], ['cron' => '0 3 * * *']),
                Queuety::resolve_cli_command('workflow state-at', ['7', '2']),
                Queuety::resolve_cli_command('workflow artifacts', ['7'], ['with-content' => 'no']),
            ]));
        foreach ([
            'Unknown Queuety CLI command path: nope' => static fn () => Queuety::resolve_cli_command('nope'),
            'Missing required positional argument: id' => static fn () => Queuety::resolve_cli_command('retry'),
            '--data must be a JSON object.' => static fn () => Queuety::resolve_cli_command('workflow approve', [1], ['data' => '"x"']),
            'Use either --workers for a fixed pool or --min-workers/--max-workers for adaptive scaling.' => static fn () => Queuety::resolve_cli_command('work', [], ['workers' => 3, 'max-workers' => 4]),
            'You must specify either --every or --cron.' => static fn () => Queuety::resolve_cli_command('schedule add', ['h']),
            'Missing required associative argument: older-than' => static fn () => Queuety::resolve_cli_command('log purge'),
        ] as $message => $call) {
            try {
                $call();
                $this->fail("no error: {$message}");
            } catch (\InvalidArgumentException $e) {
                $this->assertSame($message, $e->getMessage());
            }
        }
    }

    private function fake(): void
    {
        $before = (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn();
        $fake = $this->call('fake');
        $this->assertSame($fake, $this->call('queue_fake'));
        Queuety::dispatch(CountingHandler::class, ['a' => 1])->on_queue('q')->id();
        Queuety::dispatch(new CountingJob(5))->id();
        Queuety::dispatch_job('named');
        Queuety::batch([['handler' => 'b1'], ['handler' => 'b2']]);
        Queuety::chain([['handler' => 'c1']])->dispatch();
        $fake->assert_pushed(CountingHandler::class, static fn (array $job) => $job['queue'] === 'q');
        $fake->assert_pushed_times(CountingJob::class, 1);
        $fake->assert_pushed('named');
        $fake->assert_pushed('b2');
        $fake->assert_pushed('c1');
        $fake->assert_not_pushed('other');
        $batch = Queuety::create_batch([['handler' => 'in-batch']])->name('fake-batch')->then('Done')->dispatch();
        $this->assertSame($batch, Queuety::find_batch($batch->id));
        $this->assertSame(['fake-batch', 1, ['then' => 'Done']], [$batch->name, $batch->total_jobs, $batch->options]);
        $fake->assert_batched(static fn (array $b) => $b['options'] === ['then' => 'Done', 'name' => 'fake-batch']);
        $fake->assert_pushed('in-batch');
        $this->assertSame($before, (int) $this->conn->pdo()->query('SELECT COUNT(*) FROM wp_queuety_jobs')->fetchColumn(), 'the fake writes nothing');

        $this->call('reset');
        $this->assertNull(Queuety::queue_fake());
        try {
            Queuety::connection();
            $this->fail('reset forgets the connection');
        } catch (\RuntimeException $e) {
            $this->assertStringContainsString('Call Queuety::init() first', $e->getMessage());
        }
        $this->call('init', $this->conn);
        $this->assertSame($this->conn, Queuety::connection());
    }

    /** Call a facade method, recording it. */
    private function call(string $method, mixed ...$args): mixed
    {
        $this->called["Queuety::{$method}"] = true;
        return Queuety::{$method}(...$args);
    }

    /** Call a builder method, recording it under its class's short name. */
    private function on(object $object, string $method, mixed ...$args): mixed
    {
        $this->called[(new \ReflectionClass($object))->getShortName() . "::{$method}"] = true;
        return $object->{$method}(...$args);
    }

    /**
     * Construct a builder, recording its constructor.
     *
     * @param class-string $class
     */
    private function make(string $class, mixed ...$args): object
    {
        $this->called[(new \ReflectionClass($class))->getShortName() . '::__construct'] = true;
        return new $class(...$args);
    }
}
