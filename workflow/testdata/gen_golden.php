<?php
// Generates golden.jsonl: what the real Queuety plugin's WorkflowBuilder and
// definition-bundle dispatch write, for the Go builder tests.
//
// Needs PHP 8.2 with pdo_mysql, a MariaDB/MySQL server, and the plugin's
// src/ directory (inline0/queuety v0.22.0). From the repository root:
//
//     (a checkout of inline0/queuety v0.22.0 at $QUEUETY_SRC)
//     cp -r $QUEUETY_SRC/src /tmp/queuety/src
//     php workflow/testdata/gen_golden.php /tmp/queuety/src > workflow/testdata/golden.jsonl
//
// Database access: QUEUETY_GOLDEN_DSN_HOST (127.0.0.1), _USER (root),
// _PASSWORD (""). The script creates and drops the database
// queuety_wf_golden. The server's time zone must be UTC, as for Queuety.
//
// Every case runs the plugin's own code against its own tables (Schema::install)
// and dumps what it wrote. One JSON object per line:
//
//   {"case": NAME, "kind": "builder"|"definition"|"error", ...}
//
// builder:    the Go test rebuilds the same chain; fields "workflow" (row:
//             name, status, state, current_step, total_steps, parent ids,
//             deadline_seconds = deadline_at - started_at), "jobs" (handler,
//             payload, queue, priority, max_attempts, step_index, cost_units,
//             concurrency_group, concurrency_limit, delay_seconds =
//             available_at - created_at), "started_log" (handler, queue of the
//             workflow_started log row), "dispatch_key", and "definition"
//             (json_encode(build_runtime_definition())).
// definition: a bundle dispatched through Workflow (dispatch_definition,
//             dispatch_defined_workflow, dispatch_run_workflow); "bundle",
//             "initial" and "options" say what was dispatched, the rest is as
//             for builder.
// error:      "class" and "message" of the exception the chain threw.

declare(strict_types=1);

use Queuety\Attributes\QueuetyHandler;
use Queuety\Connection;
use Queuety\Enums\ForEachMode;
use Queuety\Enums\Priority;
use Queuety\Enums\WaitMode;
use Queuety\Logger;
use Queuety\Queue;
use Queuety\Schema;
use Queuety\Workflow;
use Queuety\WorkflowBuilder;

if ($argc < 2 || !is_file($argv[1] . '/WorkflowBuilder.php')) {
    fwrite(STDERR, "usage: php gen_golden.php <queuety src dir>\n");
    exit(2);
}
$src = rtrim($argv[1], '/');
spl_autoload_register(static function (string $class) use ($src): void {
    if (str_starts_with($class, 'Queuety\\')) {
        $file = $src . '/' . str_replace('\\', '/', substr($class, 8)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

// Handler classes whose metadata (attributes, config()) Queuety reads when it
// enqueues a step. The Go tests pass the same values as HandlerMetadata.
#[QueuetyHandler('meta_attr', queue: 'meta-queue', max_attempts: 5)]
final class MetaAttrStep implements Queuety\Step
{
    public function handle(array $state): array { return []; }
    public function config(): array { return []; }
}

final class MetaConfigStep implements Queuety\Step
{
    public function handle(array $state): array { return []; }
    public function config(): array
    {
        return ['queue' => 'cfg-queue', 'max_attempts' => 4, 'backoff' => [5, 10], 'rate_limit' => [10, 60],
            'concurrency_group' => 'grp', 'concurrency_limit' => 2, 'cost_units' => 7];
    }
}

final class MetaLinearStep implements Queuety\Step
{
    public function handle(array $state): array { return []; }
    public function config(): array { return ['backoff' => 'linear', 'concurrency_limit' => 3]; }
}

$host = getenv('QUEUETY_GOLDEN_DSN_HOST') ?: '127.0.0.1';
$user = getenv('QUEUETY_GOLDEN_DSN_USER') ?: 'root';
$pass = getenv('QUEUETY_GOLDEN_DSN_PASSWORD') ?: '';
$dbname = 'queuety_wf_golden';
$admin = new PDO("mysql:host={$host}", $user, $pass, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$admin->exec("DROP DATABASE IF EXISTS {$dbname}");
$admin->exec("CREATE DATABASE {$dbname}");

$conn = new Connection($host, $dbname, $user, $pass);
Schema::install($conn);
$queue = new Queue($conn);
$logger = new Logger($conn);
$engine = new Workflow($conn, $queue, $logger);
$pdo = $conn->pdo();
$wb = static fn(string $name): WorkflowBuilder => new WorkflowBuilder($name, $conn, $queue, $logger);

function dump_workflow(PDO $pdo, int $id): array
{
    $row = $pdo->query("SELECT name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index,
        TIMESTAMPDIFF(SECOND, started_at, deadline_at) AS deadline_seconds FROM wp_queuety_workflows WHERE id = {$id}")->fetch(PDO::FETCH_ASSOC);
    foreach (['current_step', 'total_steps', 'parent_workflow_id', 'parent_step_index', 'deadline_seconds'] as $k) {
        $row[$k] = null === $row[$k] ? null : (int) $row[$k];
    }
    $jobs = $pdo->query("SELECT handler, payload, queue, priority, max_attempts, step_index, cost_units, concurrency_group,
        concurrency_limit, TIMESTAMPDIFF(SECOND, created_at, available_at) AS delay_seconds
        FROM wp_queuety_jobs WHERE workflow_id = {$id} ORDER BY id")->fetchAll(PDO::FETCH_ASSOC);
    foreach ($jobs as &$job) {
        foreach (['priority', 'max_attempts', 'step_index', 'cost_units', 'concurrency_limit', 'delay_seconds'] as $k) {
            $job[$k] = null === $job[$k] ? null : (int) $job[$k];
        }
    }
    $log = $pdo->query("SELECT handler, queue FROM wp_queuety_logs WHERE workflow_id = {$id} AND event = 'workflow_started'")->fetch(PDO::FETCH_ASSOC);
    $key = $pdo->query("SELECT dispatch_key FROM wp_queuety_workflow_dispatch_keys WHERE workflow_id = {$id}")->fetchColumn();
    return ['workflow' => $row, 'jobs' => $jobs, 'started_log' => $log ?: null, 'dispatch_key' => false === $key ? null : $key];
}

function emit(array $line): void
{
    echo json_encode($line, JSON_THROW_ON_ERROR), "\n";
}

function run_case(string $name, callable $fn): void
{
    try {
        $line = $fn();
    } catch (Throwable $e) {
        emit(['case' => $name, 'kind' => 'error', 'class' => get_class($e), 'message' => $e->getMessage()]);
        return;
    }
    if (!is_array($line)) {
        // An error case whose chain did not throw: the Go test fails on it.
        $line = ['kind' => 'no_error'];
    }
    emit(['case' => $name] + $line);
}

// builder runs a chain and dispatches it.
$builder = static function (WorkflowBuilder $b, array $payload = []) use ($pdo): array {
    $definition = json_encode($b->build_runtime_definition(), JSON_THROW_ON_ERROR);
    $id = $b->dispatch($payload);
    return ['kind' => 'builder'] + dump_workflow($pdo, $id) + ['definition' => $definition];
};

// definition dispatches a bundle through the engine.
$definition = static function (array $bundle, array $initial, array $options, callable $dispatch) use ($pdo): array {
    $id = $dispatch($bundle, $initial);
    return ['kind' => 'definition', 'bundle' => json_encode($bundle, JSON_THROW_ON_ERROR),
        'initial' => json_encode($initial, JSON_THROW_ON_ERROR), 'options' => $options] + dump_workflow($pdo, $id);
};

$full_child = static fn() => $wb('full_child')
    ->on_queue('child-q')->with_priority(Priority::Normal)->max_attempts(4)
    ->on_cancel('ChildCancel')->prune_state_after(2)->must_complete_within(seconds: 90)
    ->on_deadline('ChildDeadline')->version('child.v1')
    ->max_transitions(20)->max_state_bytes(10000)->max_started_workflows(3)->compensate_on_failure()
    ->then('ChildStep')->compensate_with('ChildUndo');

// ---------------------------------------------------------------- builder
$cases = [
    'sequence' => fn() => $builder($wb('seq')->then('IncStep')->then('IncStep', 'second')->then('IncStep'),
        ['n' => 0, 'title' => "\u{00dc}n\u{00ef}/code"]),
    'all_settings' => fn() => $builder($wb('all')
        ->on_queue('bulk')->with_priority(Priority::High)->max_attempts(5)
        ->on_cancel('CancelHandler')->prune_state_after(3)->must_complete_within(seconds: 30, minutes: 2)
        ->on_deadline('DeadlineHandler')->version(' v2 ')->idempotency_key(' key-1 ')
        ->max_transitions(10)->max_for_each_items(5)->max_state_bytes(4096)->max_cost_units(50)
        ->max_started_workflows(4)->compensate_on_failure()
        ->then('StepA'), ['x' => 1, '_private' => 'kept', 'emoji' => "\u{1F600}", 'html' => '<a href="x">&</a>']),
    'zero_settings' => fn() => $builder($wb('zero')->prune_state_after(0)->must_complete_within()->then('StepA')),
    'empty_queue_zero_attempts' => fn() => $builder($wb('edge')->on_queue('')->max_attempts(0)->then('StepA')),
    'parallel_compensated' => fn() => $builder($wb('par')->parallel(['BranchA', ' BranchB '])->compensate_with('Undo')->then('StepC')),
    'for_each_defaults' => fn() => $builder($wb('fe')->for_each('items', 'ItemStep')->then('After'), ['items' => [1, 2]]),
    'for_each_full' => fn() => $builder($wb('fe_full')->then('Plan')
        ->for_each('items', 'ItemStep', 'res', ForEachMode::FirstSuccess, 2, 'Reducer', 'fan')->compensate_with('Undo')
        ->for_each('more', 'ItemStep', mode: ForEachMode::Quorum)),
    'repeat' => fn() => $builder($wb('rep')->then('Draft', 'draft')
        ->repeat_while('draft', 'flag', ['a' => 1, 'b' => [1.5, null]], max_iterations: 2)
        ->repeat_until(' draft ', condition_class: ' Cond ', name: 'loop_end')
        ->repeat_until('draft', 'done')->compensate_with('Undo')),
    'run_workflow' => function () use ($builder, $wb) {
        $sub = $wb('ignored_sub_name')->on_queue('sub-q')->with_priority(Priority::Urgent)->max_attempts(2)
            ->version('sub.v9')->then('SubStep')->delay(5);
        $b = $wb('outer')->then('StepA')->run_workflow('child', $sub)->compensate_with('Undo');
        $sub->then('LateStep'); // the sub-builder is read at dispatch
        return $builder($b, ['n' => 0]);
    },
    'delays' => fn() => $builder($wb('delays')->delay(30)->then('StepA')->delay(minutes: 1, hours: 1)
        ->delay(days: 1)->compensate_with('Undo')),
    'signals' => fn() => $builder($wb('sig')->wait_for_signal('go')
        ->wait_for_signal(' spaced ', 'rk', null, ['a' => ['b' => 1]], 'corr')
        ->wait_for_signals(['a', ' ', 'b'], WaitMode::Any)
        ->wait_for_signals([' only '])
        ->wait_for_approval()
        ->wait_for_decision()
        ->wait_for_input('form', null, 'custom_input')
        ->wait_for_decision('yes', 'yes', 'same')
        ->wait_for_approval('ok', 'approved_by', 'approve', ['role' => 'admin'], 'ticket')->compensate_with('Undo')),
    'workflow_waits' => fn() => $builder($wb('waits')->wait_for_workflow(5)
        ->wait_for_workflow('dep_key', 'res')
        ->wait_for_workflows([3, 0, -1, 3, 7], WaitMode::Any)
        ->wait_for_workflows(' ids_key ', WaitMode::Quorum, 'r', 'named', 2)
        ->wait_for_workflows([1], WaitMode::All, null, null, 9)
        ->wait_for_workflows([])
        ->wait_for_workflow_group('g')
        ->wait_for_workflow_group(' g2 ', WaitMode::Quorum, 3, 'out')
        ->wait_for_workflow_group('g3', WaitMode::Any, 4)
        ->wait_for_agents()
        ->wait_for_agents([4, 5], WaitMode::Any, null)
        ->wait_for_agent_group()
        ->wait_for_agent_group('team', WaitMode::Quorum, 1, null, 'team_wait')->compensate_with('Undo')),
    'start_workflows' => fn() => $builder($wb('starter')
        ->start_workflows('items', $wb('plain_child')->then('ChildStep'))
        ->start_workflows(' tasks ', $full_child(), ' ids ', ' p ', false, 'st', ' grp ')
        ->start_agents('agent_tasks', $wb('agent')->then('AgentStep'), group_key: 'researchers')
        ->start_agents('more', $wb('agent')->then('AgentStep'), group_key: '  ')->compensate_with('Undo'),
        ['items' => ['a', 'b']]),
    'handler_metadata_attribute' => fn() => $builder($wb('meta1')->then('MetaAttrStep')),
    'handler_metadata_config' => fn() => $builder($wb('meta2')->on_queue('wfq')->then('MetaConfigStep')),
    'handler_metadata_parallel' => fn() => $builder($wb('meta3')->parallel(['MetaConfigStep', 'MetaAttrStep', 'MetaLinearStep'])),
    'placeholder_ignores_metadata' => fn() => $builder($wb('meta4')->max_attempts(2)->for_each('items', 'MetaConfigStep')),

    // ------------------------------------------------------------ errors
    'error_no_steps' => fn() => $builder($wb('empty')),
    'error_state_bytes' => fn() => $builder($wb('big')->max_state_bytes(10)->then('StepA'), ['text' => 'more than ten bytes']),
    'error_repeat_empty_target' => fn() => $wb('x')->then('A')->repeat_until(' ', 'k'),
    'error_repeat_empty_state_key' => fn() => $wb('x')->then('A')->repeat_until('0', ' '),
    'error_repeat_empty_condition' => fn() => $wb('x')->then('A')->repeat_until('0', condition_class: ' '),
    'error_repeat_no_condition' => fn() => $wb('x')->then('A')->repeat_until('0'),
    'error_repeat_both' => fn() => $wb('x')->then('A')->repeat_while('0', 'k', condition_class: 'C'),
    'error_repeat_max_iterations' => fn() => $wb('x')->then('A')->repeat_while('0', 'k', max_iterations: 0),
    'error_repeat_unknown_target' => fn() => $wb('x')->then('A')->repeat_while('later', 'k')->then('B', 'later'),
    'error_signal_no_names' => fn() => $wb('x')->wait_for_signals([' ', '']),
    'error_signal_quorum' => fn() => $wb('x')->wait_for_signals(['a'], WaitMode::Quorum),
    'error_workflow_quorum_missing' => fn() => $wb('x')->wait_for_workflows([1, 2], WaitMode::Quorum),
    'error_workflow_quorum_zero' => fn() => $wb('x')->wait_for_workflows('k', WaitMode::Quorum, null, null, 0),
    'error_workflow_empty_key' => fn() => $wb('x')->wait_for_workflows('  '),
    'error_group_empty' => fn() => $wb('x')->wait_for_workflow_group(' '),
    'error_group_quorum' => fn() => $wb('x')->wait_for_agent_group('team', WaitMode::Quorum),
    'error_start_items_key' => fn() => $wb('x')->start_workflows(' ', $wb('c')->then('A')),
    'error_start_result_key' => fn() => $wb('x')->start_workflows('items', $wb('c')->then('A'), ' '),
    'error_start_payload_key' => fn() => $wb('x')->start_agents('items', $wb('c')->then('A'), 'ids', ''),
    'error_compensate_first' => fn() => $wb('x')->compensate_with('Undo'),
    'error_version' => fn() => $wb('x')->version(' '),
    'error_idempotency_key' => fn() => $wb('x')->idempotency_key(''),
    'error_max_transitions' => fn() => $wb('x')->max_transitions(0),
    'error_max_for_each_items' => fn() => $wb('x')->max_for_each_items(-1),
    'error_max_state_bytes' => fn() => $wb('x')->max_state_bytes(0),
    'error_max_cost_units' => fn() => $wb('x')->max_cost_units(0),
    'error_max_started_workflows' => fn() => $wb('x')->max_started_workflows(0),
];

// ------------------------------------------------------------- definition
$dispatch_definition = static fn(array $options) => static fn(array $bundle, array $initial): int
    => $engine->dispatch_definition($bundle, $initial, $options);
$serialized = static fn(array $steps, array $extra = []) => ['name' => 'serialized', 'steps' => $steps] + $extra;

$cases += [
    'bundle_all_settings' => fn() => $definition($full_child()->build_runtime_definition(), ['a' => 1],
        ['idempotency_key' => ' bundle-key '], $dispatch_definition(['idempotency_key' => ' bundle-key '])),
    'bundle_started_by' => fn() => $definition($wb('agent')->then('AgentStep')->build_runtime_definition(),
        ['brief_id' => 7, 'agent_task' => 'pricing', 'start_item_index' => 0], ['started_by_workflow_id' => 10, 'started_by_step_index' => 3],
        static fn(array $bundle, array $initial): int => (new ReflectionMethod(Workflow::class, 'dispatch_defined_workflow'))
            ->invoke($engine, $bundle, $initial, null, null, 10, 3)),
    'bundle_run_workflow_child' => fn() => $definition(
        ['name' => 'inner', 'steps' => [['type' => 'single', 'name' => '0', 'class' => 'IncStep']], 'queue' => 'q', 'priority' => 2, 'max_attempts' => 4],
        ['n' => 1], ['parent_workflow_id' => 1, 'parent_step_index' => 1],
        static fn(array $bundle, array $initial): int => $engine->dispatch_run_workflow(1, 1, $bundle['name'], $bundle['steps'], $initial, 'q', 2, 4)),
    'bundle_serialized_single' => fn() => $definition($serialized([[
        'type' => 'single', 'name' => 'one', 'class' => 'Handler', 'payload' => ['k' => 'v', 'list' => [1, 2]],
        'queue' => ' critical ', 'priority' => 'urgent', 'config' => ['queue' => 'ignored', 'delay' => 99],
        'retry' => ['max_attempts' => 2, 'backoff' => [0, 'x', -5, 30]],
        'resources' => ['rate_limit' => ['max' => 3, 'window' => 9], 'concurrency_group' => 'g', 'concurrency_limit' => 2, 'cost_units' => 4],
        'timeout' => ['minutes' => 1, 'seconds' => '5'], 'job_delay' => 15, 'extra_key' => ['kept' => true],
    ]]), [], [], $dispatch_definition([])),
    'bundle_serialized_parallel' => fn() => $definition($serialized([[
        'type' => 'parallel', 'name' => 'p', 'queue' => 'critical', 'config' => ['retry' => ['max_attempts' => 4], 'timeout' => 7],
        'payload' => ['shared' => 1, 'over' => 'step'], 'retry' => ['backoff' => 'exponential'],
        'branches' => ['A', ['handler' => 'B', 'payload' => ['b' => 1, 'over' => 'branch'], 'priority' => 'high',
            'retry' => ['backoff' => 'fixed'], 'timeout_seconds' => 9, 'config' => ['queue' => 'bq']],
            ['class' => ' '], 5, ['class' => ' C ', '0' => 'dropped', 'resources' => ['concurrency_group' => 'cg', 'concurrency_limit' => 1, 'cost_units' => 0]]],
        'handlers' => ['Ignored'],
    ]]), [], [], $dispatch_definition([])),
    'bundle_legacy_and_placeholders' => fn() => $definition($serialized(['LegacyClass', ['type' => 'delay', 'delay_seconds' => 20]]),
        ['x' => 1], [], $dispatch_definition([])),
    'bundle_delay_first' => fn() => $definition($serialized([['type' => 'delay', 'name' => 'd', 'delay_seconds' => 20, 'job_delay' => 99,
        'priority' => 3, 'max_attempts' => 2, 'cost_units' => 5]]), [], [], $dispatch_definition([])),
    'bundle_odd_settings' => fn() => $definition($serialized([['type' => 'wait_for_signal', 'signal_name' => 's']],
        ['name' => ' ', 'queue' => ' ', 'priority' => 7, 'max_attempts' => 0]), [], [], $dispatch_definition([])),
    'bundle_loose_options' => fn() => $definition($serialized([[
        'type' => 'single', 'class' => 'H', 'rate_limit' => [5, 60], 'backoff' => 'bogus', 'max_attempts' => '3',
        'cost_units' => 0, 'concurrency_limit' => 4, 'priority' => 9, 'delay' => ['hours' => 1, 'days' => true],
    ]]), [], [], $dispatch_definition([])),
    'bundle_handler_refs' => fn() => $definition($serialized([['type' => 'single', 'class' => 'H']], [
        'cancel_handler' => ['handler' => ' H ', 'config' => ['a' => 1]], 'deadline_handler' => 'D', 'prune_after' => '3',
        'deadline_seconds' => 60, 'workflow_budget' => ['max_transitions' => 5, 'max_state_bytes' => '9', 'bogus' => 1],
        'definition_version' => ' v ', 'definition_hash' => ' abc ', 'compensate_on_failure' => 1,
    ]), ['k' => 'v'], [], $dispatch_definition([])),
    'bundle_option_precedence' => fn() => $definition($serialized([[
        'type' => 'single', 'class' => 'H', 'max_attempts' => 5, 'backoff' => [1], 'priority' => 'high ', 'timeout' => 11, 'timeout_seconds' => 'x',
        'retry' => ['max_attempts' => 2, 'backoff' => 'linear'], 'resources' => ['cost_units' => 6],
        'config' => ['queue' => 'cq', 'priority' => 'low', 'retry' => ['max_attempts' => 9, 'backoff' => 'fixed'], 'resources' => ['cost_units' => 3], 'timeout' => ['seconds' => 4]],
    ]]), [], [], $dispatch_definition([])),
    'bundle_config_only' => fn() => $definition($serialized([[
        'type' => 'single', 'class' => 'H',
        'config' => ['queue' => 'cq', 'priority' => 2, 'retry' => ['max_attempts' => 9, 'backoff' => [3]],
            'resources' => ['rate_limit' => ['max_executions' => 2, 'window_seconds' => 30], 'concurrency_group' => ' g ', 'concurrency_limit' => 5, 'cost_units' => 2],
            'timeout' => ['hours' => 1], 'delay' => ['minutes' => 2]],
    ]]), [], [], $dispatch_definition([])),
    'bundle_blank_queue_and_odd_groups' => fn() => $definition($serialized([[
        'type' => 'single', 'class' => 'H', 'queue' => ' ', 'config' => 'nonsense', 'retry' => [1, 2], 'payload' => [7, 8],
    ]]), [], [], $dispatch_definition([])),
    'bundle_metadata_and_overrides' => fn() => $definition($serialized([
        ['type' => 'single', 'class' => 'MetaConfigStep', 'queue' => 'own', 'resources' => ['rate_limit' => [1, 2]], 'retry' => ['backoff' => [4]]],
    ]), [], [], $dispatch_definition([])),
    'bundle_empty_steps_started' => fn() => $definition(['name' => 'nothing', 'steps' => []], [],
        ['started_by_workflow_id' => 4, 'started_by_step_index' => 0],
        static fn(array $bundle, array $initial): int => (new ReflectionMethod(Workflow::class, 'dispatch_defined_workflow'))
            ->invoke($engine, $bundle, $initial, null, null, 4, 0)),
];

foreach ($cases as $name => $fn) {
    run_case($name, $fn);
}
$admin->exec("DROP DATABASE IF EXISTS {$dbname}");
