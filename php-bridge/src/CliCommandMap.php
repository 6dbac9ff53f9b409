<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ExpressionType;

/**
 * The plugin's map of its 42 `wp queuety` commands to facade calls
 * (Queuety::cli_command_map(), resolve_cli_command()): each command's
 * operation, path, WP-CLI handler (as names: the classes are the
 * plugin's), the facade methods it may run, and a plan for given
 * arguments: {transport: php, callable: "Queuety\Queuety::…", arguments}.
 * Every plan's callable is a facade method of this package, so
 * call_user_func_array($plan['callable'], $plan['arguments']) runs the
 * command without WordPress.
 *
 * Arguments are declared per command: "id" / "pos:NAME" (a required
 * positional, as int / string), "int:NAME=DEFAULT", "opt:NAME" or
 * "opt:NAME=DEFAULT" (an optional --NAME), "json:NAME" (a JSON array, []
 * when absent or not one), "json!:NAME" (the same, but not-an-array is an
 * error), "flag:NAME"; anything else is passed as is. A closure builds
 * the plans of the commands that choose between calls.
 */
final class CliCommandMap
{
    /** @var array<string, array<string, mixed>>|null by path */
    private static ?array $index = null;

    /** @return list<array<string, mixed>> */
    public static function definitions(): array
    {
        return array_values(self::index());
    }

    /** @param string|list<string> $path */
    public static function definition(string|array $path): ?array
    {
        return self::index()[implode(' ', self::path($path))] ?? null;
    }

    /**
     * @param string|list<string>  $path       "workflow export", or ['wp', 'queuety', 'workflow', 'export']
     * @param list<mixed>          $args       positional arguments
     * @param array<string, mixed> $assoc_args --name=value arguments
     * @return array<string, mixed> the definition merged with the plan
     * @throws \InvalidArgumentException For an unknown path or a missing or bad argument.
     */
    public static function resolve(string|array $path, array $args = [], array $assoc_args = []): array
    {
        $key = implode(' ', self::path($path));
        $definition = self::index()[$key] ?? throw new \InvalidArgumentException(sprintf('Unknown Queuety CLI command path: %s', $key));
        return array_merge($definition, ['transport' => 'php', 'arguments' => [], 'needs_confirmation' => false, 'confirmation_message' => null],
            ($definition['adapter'])(array_values($args), $assoc_args));
    }

    /** @return array<string, array<string, mixed>> */
    private static function index(): array
    {
        if (self::$index !== null) {
            return self::$index;
        }
        $index = [];
        foreach (self::commands() as [$operation, $path, $class, $method, $targets, $summary, $args]) {
            $adapter = $args instanceof \Closure ? $args : self::plan_of($targets[0], $args);
            $index[$path] = [
                'operation' => $operation,
                'cli_path' => explode(' ', $path),
                'handler' => ['class' => 'Queuety\\CLI\\' . $class, 'method' => $method],
                'targets' => array_map(static fn (string $m): array => ['transport' => 'php', 'callable' => Queuety::class . '::' . $m], $targets),
                'adapter' => $adapter,
                'summary' => $summary,
                'wp_cli_command' => 'wp ' . Queuety::cli_command() . ' ' . $path,
            ];
        }
        return self::$index = $index;
    }

    /**
     * [operation, path, WP-CLI class, its method, facade methods, summary, arguments]
     *
     * @return list<array{0: string, 1: string, 2: string, 3: string, 4: list<string>, 5: string, 6: list<mixed>|\Closure}>
     */
    private static function commands(): array
    {
        return [
            ['worker.run', 'work', 'QueuetyCommand', 'work', ['run_worker', 'run_worker_pool', 'run_auto_scaling_worker_pool'], 'Run one worker, a fixed worker pool, or an adaptive worker pool.', self::worker_run(...)],
            ['queue.flush', 'flush', 'QueuetyCommand', 'flush', ['flush_queue'], 'Process all pending jobs and exit.', ['opt:queue=default']],
            ['job.dispatch', 'dispatch', 'QueuetyCommand', 'dispatch', ['dispatch_job'], 'Dispatch a job with queue, priority, and delay options.', ['pos:handler', 'json:payload', 'opt:queue=default', 'int:priority=0', 'int:delay=0']],
            ['queue.status', 'status', 'QueuetyCommand', 'status', ['stats'], 'Read queue status counters.', ['opt:queue']],
            ['job.list', 'list', 'QueuetyCommand', 'list_', ['list_jobs'], 'List recent jobs with optional queue and status filters.', ['opt:queue', 'opt:status', 50]],
            ['job.retry', 'retry', 'QueuetyCommand', 'retry', ['retry'], 'Retry one job.', ['id']],
            ['job.retry-buried', 'retry-buried', 'QueuetyCommand', 'retry_buried', ['retry_buried'], 'Retry all buried jobs.', []],
            ['job.bury', 'bury', 'QueuetyCommand', 'bury', ['bury_job'], 'Manually bury a job.', ['id', 'Manually buried via CLI.']],
            ['job.delete', 'delete', 'QueuetyCommand', 'delete', ['delete_job'], 'Delete a job row.', ['id']],
            ['job.recover', 'recover', 'QueuetyCommand', 'recover', ['recover_stale_jobs'], 'Recover stale processing jobs.', []],
            ['job.purge', 'purge', 'QueuetyCommand', 'purge', ['purge'], 'Purge completed jobs.', self::job_purge(...)],
            ['queue.pause', 'pause', 'QueuetyCommand', 'pause', ['pause'], 'Pause one queue.', ['pos:queue']],
            ['queue.resume', 'resume', 'QueuetyCommand', 'resume', ['resume'], 'Resume one queue.', ['pos:queue']],
            ['job.inspect', 'inspect', 'QueuetyCommand', 'inspect', ['inspect_job'], 'Inspect one job and its log history.', ['id']],
            ['metrics.handlers', 'metrics', 'QueuetyCommand', 'metrics', ['handler_metrics'], 'Read per-handler metrics.', ['int:minutes=60']],
            ['handler.discover', 'discover', 'QueuetyCommand', 'discover', ['discover_handlers_cli'], 'Discover handlers and optionally register them.', ['pos:directory', 'pos:namespace', 'flag:register']],
            ['workflow.status', 'workflow status', 'WorkflowCommand', 'status', ['workflow_status'], 'Read workflow status.', ['id']],
            ['workflow.retry', 'workflow retry', 'WorkflowCommand', 'retry', ['retry_workflow'], 'Retry a failed workflow.', ['id']],
            ['workflow.approve', 'workflow approve', 'WorkflowCommand', 'approve', ['approve_workflow'], 'Send approval data to a workflow.', ['id', 'json!:data', 'opt:signal=approval']],
            ['workflow.reject', 'workflow reject', 'WorkflowCommand', 'reject', ['reject_workflow'], 'Send rejection data to a workflow.', ['id', 'json!:data', 'opt:signal=rejected']],
            ['workflow.input', 'workflow input', 'WorkflowCommand', 'input', ['submit_workflow_input'], 'Send structured input to a workflow.', ['id', 'json!:data', 'opt:signal=input']],
            ['workflow.artifacts', 'workflow artifacts', 'WorkflowCommand', 'artifacts', ['workflow_artifacts'], 'List workflow artifacts.', ['id', 'flag:with-content']],
            ['workflow.artifact', 'workflow artifact', 'WorkflowCommand', 'artifact', ['workflow_artifact'], 'Read one workflow artifact.', ['id', 'pos:key']],
            ['workflow.pause', 'workflow pause', 'WorkflowCommand', 'pause', ['pause_workflow'], 'Pause a workflow.', ['id']],
            ['workflow.cancel', 'workflow cancel', 'WorkflowCommand', 'cancel', ['cancel_workflow'], 'Cancel a workflow.', ['id']],
            ['workflow.resume', 'workflow resume', 'WorkflowCommand', 'resume', ['resume_workflow'], 'Resume a paused workflow.', ['id']],
            ['workflow.list', 'workflow list', 'WorkflowCommand', 'list_', ['list_workflows'], 'List workflows.', ['opt:status', 'int:limit=50']],
            ['workflow.timeline', 'workflow timeline', 'WorkflowCommand', 'timeline', ['workflow_timeline'], 'Read the workflow event timeline.', ['id', 'int:limit=100', 'int:offset=0']],
            ['workflow.rewind', 'workflow rewind', 'WorkflowCommand', 'rewind', ['rewind_workflow'], 'Rewind a workflow to an earlier step.', ['id', 'id:step']],
            ['workflow.fork', 'workflow fork', 'WorkflowCommand', 'fork', ['fork_workflow'], 'Fork a workflow into an independent copy.', ['id']],
            ['workflow.export', 'workflow export', 'WorkflowCommand', 'export', ['export_workflow', 'export_workflow_to_file'], 'Export a workflow to JSON or write it to a file.', self::workflow_export(...)],
            ['workflow.replay', 'workflow replay', 'WorkflowCommand', 'replay', ['replay_workflow_file'], 'Replay a workflow export from disk.', ['pos:file']],
            ['workflow.state-at', 'workflow state-at', 'WorkflowCommand', 'state_at', ['workflow_state_at'], 'Read workflow state after a step.', ['id', 'id:step']],
            ['log.query', 'log', 'LogCommand', '__invoke', ['query_logs'], 'Query log entries.', self::log_query(...)],
            ['log.purge', 'log purge', 'LogCommand', 'purge', ['purge_logs'], 'Purge old log entries.', self::log_purge(...)],
            ['schedule.list', 'schedule list', 'ScheduleCommand', 'list_', ['list_schedules'], 'List recurring schedules.', []],
            ['schedule.add', 'schedule add', 'ScheduleCommand', 'add', ['add_schedule'], 'Create a recurring schedule.', self::schedule_add(...)],
            ['schedule.remove', 'schedule remove', 'ScheduleCommand', 'remove', ['remove_schedule'], 'Remove a recurring schedule.', ['pos:handler']],
            ['schedule.run', 'schedule run', 'ScheduleCommand', 'run', ['run_scheduler'], 'Run one scheduler tick.', []],
            ['webhook.add', 'webhook add', 'WebhookCommand', 'add', ['register_webhook'], 'Register a webhook.', ['pos:event', 'pos:url']],
            ['webhook.list', 'webhook list', 'WebhookCommand', 'list_', ['list_webhooks'], 'List webhooks.', []],
            ['webhook.remove', 'webhook remove', 'WebhookCommand', 'remove', ['remove_webhook'], 'Remove a webhook.', ['id']],
        ];
    }

    /**
     * The adapter of a command with one call: its declared arguments.
     *
     * @param list<mixed> $spec
     */
    private static function plan_of(string $method, array $spec): \Closure
    {
        return static function (array $args, array $assoc) use ($method, $spec): array {
            $out = [];
            $position = 0;
            foreach ($spec as $item) {
                if (!is_string($item) || !preg_match('/^(id|pos|int|opt|json!?|flag)(?::([a-z-]+))?(?:=(.*))?$/', $item, $m)) {
                    $out[] = $item;
                    continue;
                }
                $name = ($m[2] ?? '') !== '' ? $m[2] : 'id';
                $default = $m[3] ?? null;
                $out[] = match ($m[1]) {
                    'id' => (int) self::positional($args, $position++, $name),
                    'pos' => self::positional($args, $position++, $name),
                    'int' => array_key_exists($name, $assoc) && is_scalar($assoc[$name]) ? (int) $assoc[$name] : (int) $default,
                    'opt' => self::option($assoc, $name) ?? $default,
                    'json', 'json!' => self::json($assoc, $name, $m[1] === 'json!'),
                    'flag' => self::flag($assoc, $name),
                };
            }
            return self::plan($method, $out);
        };
    }

    /** @param list<mixed> $arguments */
    private static function plan(string $method, array $arguments): array
    {
        return ['transport' => 'php', 'callable' => Queuety::class . '::' . $method, 'arguments' => $arguments,
            'needs_confirmation' => false, 'confirmation_message' => null];
    }

    private static function worker_run(array $args, array $assoc): array
    {
        $queue = self::option($assoc, 'queue') ?? 'default';
        $int = static fn (string $k, int $d): int => array_key_exists($k, $assoc) && is_scalar($assoc[$k]) ? (int) $assoc[$k] : $d;
        $workers = $int('workers', 0);
        $min = $int('min-workers', 1);
        $max = $int('max-workers', 0);
        if ($workers > 1 && (array_key_exists('min-workers', $assoc) || array_key_exists('max-workers', $assoc))) {
            throw new \InvalidArgumentException('Use either --workers for a fixed pool or --min-workers/--max-workers for adaptive scaling.');
        }
        if (array_key_exists('min-workers', $assoc) && !array_key_exists('max-workers', $assoc)) {
            throw new \InvalidArgumentException('--min-workers requires --max-workers.');
        }
        return match (true) {
            $max > 0 => self::plan('run_auto_scaling_worker_pool', [$min, $max, $queue]),
            $workers > 1 => self::plan('run_worker_pool', [$workers, $queue]),
            default => self::plan('run_worker', [$queue, self::flag($assoc, 'once')]),
        };
    }

    private static function job_purge(array $args, array $assoc): array
    {
        // No --older-than: null, so purge() takes QUEUETY_RETENTION_DAYS.
        $days = array_key_exists('older-than', $assoc) ? (is_scalar($assoc['older-than']) ? (int) $assoc['older-than'] : 0) : null;
        return self::plan('purge', [$days]);
    }

    private static function workflow_export(array $args, array $assoc): array
    {
        $id = (int) self::positional($args, 0, 'id');
        if (($assoc['output'] ?? null) !== null) {
            return self::plan('export_workflow_to_file', [$id, is_scalar($assoc['output']) ? (string) $assoc['output'] : '']);
        }
        return self::plan('export_workflow', [$id]);
    }

    private static function log_query(array $args, array $assoc): array
    {
        $id = static fn (string $k): ?int => array_key_exists($k, $assoc) && is_scalar($assoc[$k]) ? (int) $assoc[$k] : null;
        $filters = [
            'job_id' => $id('job'),
            'workflow_id' => $id('workflow'),
            'handler' => self::option($assoc, 'handler'),
            'event' => self::option($assoc, 'event'),
            'since' => self::option($assoc, 'since'),
            'limit' => $id('limit') ?? 50,
        ];
        if ($filters['job_id'] === null && $filters['workflow_id'] === null && $filters['handler'] === null && $filters['event'] === null && $filters['since'] === null) {
            $filters['since'] = '-24 hours';
        }
        return self::plan('query_logs', [$filters]);
    }

    private static function log_purge(array $args, array $assoc): array
    {
        if (!array_key_exists('older-than', $assoc)) {
            throw new \InvalidArgumentException('Missing required associative argument: older-than');
        }
        return self::plan('purge_logs', [is_scalar($assoc['older-than']) ? (int) $assoc['older-than'] : 0]);
    }

    private static function schedule_add(array $args, array $assoc): array
    {
        $expression = self::option($assoc, 'every');
        $type = ExpressionType::Interval;
        if ($expression === null) {
            $expression = self::option($assoc, 'cron');
            $type = ExpressionType::Cron;
        }
        if ($expression === null || $expression === '') {
            throw new \InvalidArgumentException('You must specify either --every or --cron.');
        }
        return self::plan('add_schedule', [self::positional($args, 0, 'handler'), self::json($assoc, 'payload', false),
            self::option($assoc, 'queue') ?? 'default', $expression, $type->value]);
    }

    /** @param list<mixed> $args */
    private static function positional(array $args, int $index, string $name): string
    {
        if (!array_key_exists($index, $args) || trim((string) $args[$index]) === '') {
            throw new \InvalidArgumentException(sprintf('Missing required positional argument: %s', $name));
        }
        return (string) $args[$index];
    }

    /** @param array<string, mixed> $assoc */
    private static function option(array $assoc, string $name): ?string
    {
        $value = $assoc[$name] ?? null;
        return is_scalar($value) ? (string) $value : null;
    }

    /**
     * A WP-CLI flag: present and not "", "0", "false", "no" or "off".
     *
     * @param array<string, mixed> $assoc
     */
    private static function flag(array $assoc, string $name): bool
    {
        if (!array_key_exists($name, $assoc)) {
            return false;
        }
        $value = $assoc[$name];
        if (is_bool($value) || $value === null) {
            return $value ?? true;
        }
        return !in_array(strtolower(is_scalar($value) ? (string) $value : ''), ['', '0', 'false', 'no', 'off'], true);
    }

    /**
     * @param array<string, mixed> $assoc
     * @return array<mixed>
     */
    private static function json(array $assoc, string $name, bool $required): array
    {
        $value = self::option($assoc, $name);
        if ($value === null) {
            return [];
        }
        $decoded = json_decode($value, true);
        if (!is_array($decoded) && $required) {
            throw new \InvalidArgumentException(sprintf('--%s must be a JSON object.', $name));
        }
        return is_array($decoded) ? $decoded : [];
    }

    /**
     * "wp queuety workflow export" and ['workflow', 'export'] alike.
     *
     * @param string|list<string> $path
     * @return list<string>
     */
    private static function path(string|array $path): array
    {
        $segments = is_string($path) ? (preg_split('/\s+/', trim($path)) ?: []) : $path;
        $segments = array_values(array_filter(array_map(static fn ($s) => trim((string) $s), $segments), static fn (string $s) => $s !== ''));
        if (($segments[0] ?? null) === 'wp') {
            array_shift($segments);
        }
        if (($segments[0] ?? null) === Queuety::cli_command()) {
            array_shift($segments);
        }
        return $segments;
    }
}
