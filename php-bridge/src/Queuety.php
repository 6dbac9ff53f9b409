<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Bridge\Handlers;
use Queuety\Enums\Priority;

/**
 * Queuety's facade: the same static methods and signatures as the plugin
 * for what the bridge covers (jobs, queue control, workflow dispatch,
 * signals, status and lifecycle), so application code runs on either.
 *
 *     Queuety::init(Connection::from_wp_config('/var/www/html/wp-config.php'));
 *     $id = Queuety::dispatch(SendEmail::class, ['to' => 'a@b.c'])->with_priority(Priority::High)->id();
 *     $wf = Queuety::workflow('onboard')->then(CreateUser::class)->wait_for_approval()->dispatch(['email' => 'a@b.c']);
 *     Queuety::approve_workflow($wf, ['by' => 'admin']);
 */
class Queuety
{
    private static ?Connection $conn = null;
    private static ?Queue $queue = null;
    private static ?WorkflowRegistry $workflow_registry = null;
    private static ?RateLimiter $rate_limiter = null;
    private static ?Contracts\Cache $cache = null;
    private static ?Testing\QueueFake $queue_fake = null;
    private static ?Testing\FakeQueue $fake_queue = null;
    private static ?Testing\FakeBatchManager $fake_batches = null;

    public static function init(Connection $conn): void
    {
        self::$conn = $conn;
        self::$queue = new Queue($conn);
        self::$workflow_registry = new WorkflowRegistry();
        self::$rate_limiter = new RateLimiter($conn);
        self::$cache ??= new Cache\MemoryCache();
    }

    /**
     * The WP-CLI command name (QUEUETY_CLI_COMMAND, or "queuety").
     */
    public static function cli_command(): string
    {
        if (!defined('QUEUETY_CLI_COMMAND')) {
            return 'queuety';
        }
        $raw = constant('QUEUETY_CLI_COMMAND');
        $command = is_scalar($raw) ? trim((string) $raw) : '';
        return $command !== '' ? $command : 'queuety';
    }

    /**
     * Create or upgrade Queuety's tables: the queuety binary's `migrate`
     * (QUEUETY_BIN, or `queuety` on the PATH), which writes the plugin's
     * schema.
     */
    public static function ensure_schema(): void
    {
        self::worker()->migrate();
    }

    /**
     * The plugin's 42 `wp queuety` commands: operation, path, WP-CLI
     * handler (by name), the facade methods each may run, and its
     * adapter (here a closure; the plugin's is a callable string).
     *
     * @return list<array<string, mixed>>
     */
    public static function cli_command_map(): array
    {
        return CliCommandMap::definitions();
    }

    /**
     * A command's plan for its arguments: the facade method to call and
     * its arguments (call_user_func_array($plan['callable'],
     * $plan['arguments']) runs it, here as under the plugin).
     *
     * @param string|list<string>  $path       "workflow export" or ['wp', 'queuety', 'workflow', 'export']
     * @param array<mixed>         $args
     * @param array<string, mixed> $assoc_args
     * @return array<string, mixed>
     * @throws \InvalidArgumentException For an unknown path or a missing argument.
     */
    public static function resolve_cli_command($path, array $args = [], array $assoc_args = []): array
    {
        return CliCommandMap::resolve($path, $args, $assoc_args);
    }

    /**
     * Start a job. The handler is a name registered with register() or
     * Bridge\Handlers::register(), or a class name; a class's attribute and
     * config() defaults are applied before your fluent calls, as in the
     * plugin.
     *
     * @param array<mixed> $payload
     */
    public static function dispatch(string|Contracts\Job $handler, array $payload = []): PendingJob
    {
        if ($handler instanceof Contracts\Job) {
            // The plugin's row for a job object: its class and public
            // properties; $tries, group and cost from the class defaults.
            $serialized = JobSerializer::serialize($handler);
            $pending = new PendingJob($serialized['handler'], $serialized['payload'], self::writer(), $handler);
            $defaults = JobMetadata::from_class($serialized['handler']);
            if ($defaults['tries'] !== null) {
                $pending->max_attempts($defaults['tries']);
            }
            if ($defaults['concurrency_group'] !== null && $defaults['concurrency_limit'] !== null) {
                $pending->concurrency_group($defaults['concurrency_group'], $defaults['concurrency_limit']);
            }
            if ($defaults['cost_units'] !== null) {
                $pending->cost_units($defaults['cost_units']);
            }
            return $pending;
        }
        return self::apply_pending_defaults(new PendingJob($handler, $payload, self::writer()), $handler);
    }

    /**
     * Run a job now, in this process: a job object's handle(), a job
     * class built from the payload, or a registered handler with the
     * payload. Nothing is written.
     *
     * @param array<mixed> $payload
     */
    public static function dispatch_sync(string|Contracts\Job $handler, array $payload = []): void
    {
        if ($handler instanceof Contracts\Job) {
            $handler->handle();
            return;
        }
        if (class_exists($handler) && is_subclass_of($handler, Contracts\Job::class)) {
            JobSerializer::deserialize($handler, $payload)->handle();
            return;
        }
        $resolved = self::registry()->resolve($handler);
        if ($resolved instanceof Contracts\Job) {
            $resolved->handle();
        } elseif ($resolved instanceof Handler) {
            $resolved->handle($payload);
        }
    }

    /**
     * Work the queue(s) with the queuety daemon until it is stopped;
     * $once runs at most one job (see Worker for the binary and PHP pool).
     *
     * @param string|list<string> $queue
     */
    public static function run_worker(string|array $queue = 'default', bool $once = false): void
    {
        self::worker()->run($queue, $once);
    }

    /** The daemon as the plugin's fixed pool of $workers (`queuety work --workers`). */
    public static function run_worker_pool(int $workers, string $queue = 'default'): void
    {
        if ($workers < 1) {
            throw new \InvalidArgumentException('A worker pool needs at least 1 worker.');
        }
        self::worker()->run_pool($workers, $queue);
    }

    /**
     * The daemon as the plugin's adaptive pool (`queuety work --min-workers
     * --max-workers`; the daemon keeps it at its maximum).
     */
    public static function run_auto_scaling_worker_pool(int $min_workers, int $max_workers, string $queue = 'default'): void
    {
        if ($min_workers < 1 || $max_workers < $min_workers) {
            throw new \InvalidArgumentException('Worker pool bounds must satisfy 1 <= min_workers <= max_workers.');
        }
        self::worker()->run_auto_scaling_pool($min_workers, $max_workers, $queue);
    }

    /**
     * Run every due job of the queue(s) with `queuety flush`; how many ran.
     *
     * @param string|list<string> $queue
     */
    public static function flush_queue(string|array $queue = 'default'): int
    {
        return self::worker()->flush($queue);
    }

    /**
     * Jobs newest first (id, queue, handler, status, attempts, priority,
     * created_at), optionally of one queue and status.
     *
     * @return list<array<string, mixed>>
     */
    public static function list_jobs(?string $queue = null, ?string $status = null, int $limit = 50): array
    {
        $table = self::connection()->table(Config::table_jobs());
        $sql = "SELECT id, queue, handler, status, attempts, priority, created_at FROM {$table} WHERE 1=1";
        $params = [];
        if ($queue !== null) {
            $sql .= ' AND queue = :queue';
            $params['queue'] = $queue;
        }
        if ($status !== null) {
            $sql .= ' AND status = :status';
            $params['status'] = $status;
        }
        $stmt = self::connection()->pdo()->prepare($sql . ' ORDER BY id DESC LIMIT ' . max(1, $limit));
        $stmt->execute($params);
        return array_values($stmt->fetchAll(\PDO::FETCH_ASSOC));
    }

    /**
     * A job's row and its log rows, or null.
     *
     * @return array{job: array<string, mixed>, logs: list<array<string, mixed>>}|null
     */
    public static function inspect_job(int $job_id): ?array
    {
        $job = self::queue_()->find($job_id);
        if ($job === null) {
            return null;
        }
        $at = static fn (?\DateTimeImmutable $t): ?string => $t?->format('Y-m-d H:i:s');
        return [
            'job' => [
                'id' => $job->id,
                'handler' => $job->handler,
                'queue' => $job->queue,
                'status' => $job->status->value,
                'priority' => $job->priority->value,
                'attempts' => $job->attempts,
                'max_attempts' => $job->max_attempts,
                'payload' => $job->payload,
                'created_at' => $job->created_at->format('Y-m-d H:i:s'),
                'available_at' => $job->available_at->format('Y-m-d H:i:s'),
                'reserved_at' => $at($job->reserved_at),
                'completed_at' => $at($job->completed_at),
                'failed_at' => $at($job->failed_at),
                'error_message' => $job->error_message,
                'workflow_id' => $job->workflow_id,
                'step_index' => $job->step_index,
                'depends_on' => $job->depends_on,
            ],
            'logs' => self::logger()->for_job($job_id),
        ];
    }

    public static function bury_job(int $job_id, string $error_message = 'Manually buried via CLI.'): void
    {
        self::queue_()->bury($job_id, $error_message);
    }

    /** Delete a job row; whether there was one. */
    public static function delete_job(int $job_id): bool
    {
        $table = self::connection()->table(Config::table_jobs());
        $stmt = self::connection()->pdo()->prepare("DELETE FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $job_id]);
        return $stmt->rowCount() > 0;
    }

    /** `queuety recover`: rescue stale processing jobs; how many. */
    public static function recover_stale_jobs(): int
    {
        return self::worker()->recover_stale();
    }

    /** @return list<array<string, mixed>> */
    public static function handler_metrics(int $minutes = 60): array
    {
        return self::metrics()->handler_stats($minutes);
    }

    /**
     * Handler classes under a PSR-4 directory, optionally registered.
     *
     * @return array{discovered: list<array<string, mixed>>, registered: int}
     */
    public static function discover_handlers_cli(string $directory, string $namespace, bool $register = false): array
    {
        self::connection();
        $discovery = new HandlerDiscovery();
        $discovered = $discovery->discover($directory, $namespace);
        return ['discovered' => $discovered, 'registered' => $register ? $discovery->register_all($directory, $namespace, self::registry()) : 0];
    }

    /**
     * The plugin's CLI-style dispatch: an invalid priority means Low.
     *
     * @param array<mixed> $payload
     */
    public static function dispatch_job(string $handler, array $payload = [], string $queue = 'default', int $priority = 0, int $delay = 0): int
    {
        return self::dispatch($handler, $payload)
            ->on_queue($queue)
            ->with_priority(Priority::tryFrom($priority) ?? Priority::Low)
            ->delay($delay)
            ->id();
    }

    /**
     * Register a handler class under a name (the worker resolves it too).
     *
     * @param class-string $class
     */
    public static function register(string $name, string $class): void
    {
        Handlers::register($name, $class);
    }

    /**
     * Start building a workflow; dispatch() writes it.
     */
    public static function workflow(string $name): WorkflowBuilder
    {
        return new WorkflowBuilder($name, self::connection(), self::queue_());
    }

    /**
     * The workflow's status read from its row, or null when there is none.
     */
    public static function workflow_status(int $workflow_id): ?WorkflowState
    {
        return self::workflow_()->status($workflow_id);
    }

    /**
     * Store a signal for a workflow. Unlike the plugin, this does not
     * resume a waiting workflow in this request: the daemon's signal
     * poller (`queuety work --workflows`) does, within seconds.
     *
     * @param array<mixed> $data
     */
    public static function signal(int $workflow_id, string $name, array $data = []): void
    {
        self::workflow_()->handle_signal($workflow_id, $name, $data);
    }

    /**
     * @param array<mixed> $data
     */
    public static function approve_workflow(int $workflow_id, array $data = [], string $signal_name = 'approval'): void
    {
        self::signal($workflow_id, $signal_name, $data);
    }

    /**
     * @param array<mixed> $data
     */
    public static function reject_workflow(int $workflow_id, array $data = [], string $signal_name = 'rejected'): void
    {
        self::signal($workflow_id, $signal_name, $data);
    }

    /**
     * @param array<mixed> $data
     */
    public static function submit_workflow_input(int $workflow_id, array $data = [], string $signal_name = 'input'): void
    {
        self::signal($workflow_id, $signal_name, $data);
    }

    /**
     * Cancel a workflow and run its cleanup handlers (compensations, then
     * on_cancel) in this process. Workflows waiting on it are woken by the
     * daemon's wait sweeper.
     */
    public static function cancel_workflow(int $workflow_id): void
    {
        self::workflow_()->cancel($workflow_id);
    }

    /**
     * Retry a failed workflow from its failed step.
     */
    public static function retry_workflow(int $workflow_id): void
    {
        self::workflow_()->retry($workflow_id);
    }

    /**
     * Pause a running workflow.
     */
    public static function pause_workflow(int $workflow_id): void
    {
        self::workflow_()->pause($workflow_id);
    }

    /**
     * Resume a paused workflow.
     */
    public static function resume_workflow(int $workflow_id): void
    {
        self::workflow_()->resume($workflow_id);
    }

    public static function pause(string $queue): void
    {
        self::queue_()->pause_queue($queue);
    }

    public static function resume(string $queue): void
    {
        self::queue_()->resume_queue($queue);
    }

    public static function is_paused(string $queue): bool
    {
        return self::queue_()->is_queue_paused($queue);
    }

    /**
     * @return array{pending: int, processing: int, completed: int, failed: int, buried: int}
     */
    public static function stats(?string $queue = null): array
    {
        return self::queue_()->stats($queue);
    }

    /**
     * Start a recurring schedule: ->every('1 hour') or ->cron('0 3 * * *'),
     * then ->on_queue() and ->overlap(); the row is written by id() or when
     * the builder goes away, as in the plugin.
     *
     * @param array<mixed> $payload
     */
    public static function schedule(string $handler, array $payload = []): PendingSchedule
    {
        return new PendingSchedule($handler, $payload, self::scheduler());
    }

    public static function scheduler(): Scheduler
    {
        return new Scheduler(self::connection(), self::queue_());
    }

    /** @return list<Schedule> */
    public static function list_schedules(): array
    {
        return self::scheduler()->list();
    }

    /**
     * The plugin's CLI-style add: $type is 'interval' or 'cron'.
     *
     * @param array<mixed> $payload
     */
    public static function add_schedule(string $handler, array $payload, string $queue, string $expression, string $type): int
    {
        $expression_type = Enums\ExpressionType::tryFrom($type)
            ?? throw new \InvalidArgumentException(sprintf('Invalid expression type: %s', $type));
        return self::scheduler()->add($handler, $payload, $queue, $expression, $expression_type);
    }

    public static function remove_schedule(string $handler): bool
    {
        return self::scheduler()->remove($handler);
    }

    /** One scheduler tick; the number of jobs enqueued. */
    public static function run_scheduler(): int
    {
        return self::scheduler()->tick();
    }

    public static function webhook_notifier(): WebhookNotifier
    {
        return new WebhookNotifier(self::connection());
    }

    /** Register a webhook URL for an event; `queuety work` sends it. */
    public static function register_webhook(string $event, string $url): int
    {
        return self::webhook_notifier()->register($event, $url);
    }

    /**
     * @return list<array<string, mixed>>
     */
    public static function list_webhooks(): array
    {
        return self::webhook_notifier()->list();
    }

    public static function remove_webhook(int $id): void
    {
        self::webhook_notifier()->remove($id);
    }

    /**
     * A chain of jobs, each run once the one before completed.
     *
     * @param list<mixed> $jobs Contracts\Job objects or ['handler' => …, 'payload' => …].
     */
    public static function chain(array $jobs): ChainBuilder
    {
        return new ChainBuilder($jobs, self::writer());
    }

    /**
     * A batch of jobs with then/catch/finally callbacks.
     *
     * @param list<mixed> $jobs Contracts\Job objects or ['handler' => …, 'payload' => …, 'queue' => …, …].
     */
    public static function create_batch(array $jobs): BatchBuilder
    {
        if (self::$fake_batches !== null) {
            return new BatchBuilder($jobs, self::$conn, self::writer(), self::$fake_batches);
        }
        return new BatchBuilder($jobs, self::connection(), self::queue_());
    }

    /**
     * Store an artifact of a workflow (an upsert by key).
     *
     * @param array<mixed> $metadata
     */
    public static function put_artifact(int $workflow_id, string $artifact_key, mixed $content, string $kind = 'json', ?int $step_index = null, array $metadata = []): void
    {
        self::artifacts()->put($workflow_id, $artifact_key, $content, $kind, $step_index, $metadata);
    }

    /**
     * Store an artifact of the workflow whose step is running, with its
     * step index.
     *
     * @param array<mixed> $metadata
     * @throws \RuntimeException Outside a workflow step.
     */
    public static function put_current_artifact(string $artifact_key, mixed $content, string $kind = 'json', array $metadata = []): void
    {
        $workflow_id = self::current_workflow_id() ?? throw new \RuntimeException('No workflow is currently executing.');
        self::put_artifact($workflow_id, $artifact_key, $content, $kind, self::current_step_index(), $metadata);
    }

    /**
     * @return array<string, mixed>|null
     */
    public static function workflow_artifact(int $workflow_id, string $artifact_key): ?array
    {
        return self::artifacts()->get($workflow_id, $artifact_key);
    }

    /**
     * @return list<array<string, mixed>>
     */
    public static function workflow_artifacts(int $workflow_id, bool $include_content = false): array
    {
        return self::artifacts()->list($workflow_id, $include_content);
    }

    public static function delete_workflow_artifact(int $workflow_id, string $artifact_key): void
    {
        self::artifacts()->delete($workflow_id, $artifact_key);
    }

    public static function artifacts(): ArtifactStore
    {
        return new ArtifactStore(self::connection());
    }

    /** The workflow whose step the pool is running, or null. */
    public static function current_workflow_id(): ?int
    {
        return Bridge\JobContext::current()?->workflow_id;
    }

    /** The step index the pool is running, or null. */
    public static function current_step_index(): ?int
    {
        return Bridge\JobContext::current()?->step_index;
    }

    /** The step_completed event's input for the running step. */
    public static function trace_input(mixed $input): void
    {
        Bridge\Trace::set_input($input);
    }

    /** The step_completed event's output for the running step. */
    public static function trace_output(mixed $output): void
    {
        Bridge\Trace::set_output($output);
    }

    /**
     * Merged into the step_completed event's context.
     *
     * @param array<mixed> $context
     */
    public static function trace_context(array $context): void
    {
        Bridge\Trace::add_context($context);
    }

    public static function connection(): Connection
    {
        return self::$conn ?? throw new \RuntimeException('Queuety not initialized. Call Queuety::init() first.');
    }

    public static function queue(): Queue
    {
        return self::queue_();
    }

    /**
     * Forget the connection (for tests).
     */
    public static function reset(): void
    {
        self::$conn = null;
        self::$queue = null;
        self::$workflow_registry = null;
        self::$rate_limiter = null;
        self::$cache = null;
        self::$queue_fake = null;
        self::$fake_queue = null;
        self::$fake_batches = null;
    }

    private static function workflow_(): Workflow
    {
        return new Workflow(self::connection());
    }

    private static function queue_(): Queue
    {
        return self::$queue ?? throw new \RuntimeException('Queuety not initialized. Call Queuety::init() first.');
    }

    private static function apply_pending_defaults(PendingJob $pending, string $handler): PendingJob
    {
        $class = Handlers::class_name($handler);
        if ($class === null && class_exists($handler)) {
            $class = $handler;
        }
        if ($class === null) {
            return $pending;
        }
        $defaults = HandlerMetadata::from_class($class);
        if ($defaults['queue'] !== null) {
            $pending->on_queue($defaults['queue']);
        }
        if ($defaults['max_attempts'] !== null) {
            $pending->max_attempts($defaults['max_attempts']);
        }
        if ($defaults['concurrency_group'] !== null && $defaults['concurrency_limit'] !== null) {
            $pending->concurrency_group($defaults['concurrency_group'], $defaults['concurrency_limit']);
        }
        if ($defaults['cost_units'] !== null) {
            $pending->cost_units($defaults['cost_units']);
        }
        return $pending;
    }

    /*
     * State machines: dispatching, events (guards run in this process),
     * status and history on the tables; the action jobs are run by
     * `queuety work` or the plugin's workers.
     */

    public static function machine(string $name): StateMachineBuilder
    {
        return new StateMachineBuilder($name, self::machines());
    }

    /**
     * @param array<string, mixed> $definition
     * @param array<string, mixed> $initial_state
     * @param array<string, mixed> $options idempotency_key
     */
    public static function dispatch_state_machine_definition(array $definition, array $initial_state = [], array $options = []): int
    {
        return self::machines()->dispatch_definition($definition, $initial_state, $options);
    }

    public static function machine_status(int $machine_id): ?StateMachineState
    {
        return self::machines()->get_status($machine_id);
    }

    /**
     * Deliver an event to a machine waiting for one; a refused event
     * leaves its event_rejected row and throws.
     *
     * @param array<mixed> $payload
     */
    public static function machine_event(int $machine_id, string $event_name, array $payload = []): void
    {
        self::machines()->send_event($machine_id, $event_name, $payload);
    }

    /** @return list<array<string, mixed>> */
    public static function list_machines(int $limit = 50, ?string $status = null): array
    {
        return self::machines()->list($limit, $status);
    }

    /** @return list<array<string, mixed>> */
    public static function machine_timeline(int $machine_id, ?int $limit = 100, int $offset = 0): array
    {
        return self::machines()->timeline($machine_id, $limit, $offset);
    }

    /** @return array<string, mixed> */
    public static function machine_trace(int $machine_id): array
    {
        return self::machines()->trace($machine_id);
    }

    /** @return array<string, mixed>|null */
    public static function machine_state_at(int $machine_id, int $event_id): ?array
    {
        return self::machine_events()->get_state_at_event($machine_id, $event_id);
    }

    public static function machines(): StateMachine
    {
        return new StateMachine(self::connection(), self::queue_(), self::machine_events());
    }

    public static function machine_events(): StateMachineEventLog
    {
        return new StateMachineEventLog(self::connection());
    }

    /*
     * Jobs and queues.
     */

    public static function find_batch(int $id): ?Batch
    {
        return self::batch_manager()->find($id);
    }

    /**
     * Insert plain jobs in one statement; their ids.
     *
     * @param list<array<string, mixed>> $jobs handler, payload, queue, priority, delay, max_attempts
     * @return list<int>
     */
    public static function batch(array $jobs): array
    {
        return self::writer()->batch($jobs);
    }

    /** @return list<Job> */
    public static function buried(?string $queue = null): array
    {
        return self::queue_()->buried($queue);
    }

    /** Make every buried job pending again; how many. */
    public static function retry_buried(): int
    {
        $count = 0;
        foreach (self::queue_()->buried() as $job) {
            self::queue_()->retry($job->id);
            $count++;
        }
        return $count;
    }

    public static function retry(int $job_id): void
    {
        self::queue_()->retry($job_id);
    }

    /** Delete jobs completed more than $older_than_days ago (default QUEUETY_RETENTION_DAYS, else 7). */
    public static function purge(?int $older_than_days = null): int
    {
        return self::queue_()->purge_completed($older_than_days ?? Config::retention_days());
    }

    /**
     * Log rows: by job_id, workflow_id, handler, event or since (a date),
     * else the last 24 hours; limit (50) for the last three.
     *
     * @param array<string, mixed> $filters
     * @return list<array<string, mixed>>
     */
    public static function query_logs(array $filters = []): array
    {
        $logger = self::logger();
        $scalar = static fn (string $k): mixed => is_scalar($filters[$k] ?? null) ? $filters[$k] : null;
        if (($filters['job_id'] ?? null) !== null) {
            return $logger->for_job((int) $scalar('job_id'));
        }
        if (($filters['workflow_id'] ?? null) !== null) {
            return $logger->for_workflow((int) $scalar('workflow_id'));
        }
        $limit = $scalar('limit') !== null ? (int) $scalar('limit') : 50;
        if (($filters['handler'] ?? null) !== null) {
            return $logger->for_handler((string) $scalar('handler'), $limit);
        }
        if (($filters['event'] ?? null) !== null) {
            $event = Enums\LogEvent::tryFrom((string) $scalar('event'));
            return $event !== null ? $logger->for_event($event, $limit) : [];
        }
        if (($filters['since'] ?? null) !== null) {
            return $logger->since(new \DateTimeImmutable((string) ($scalar('since') ?? 'now')), $limit);
        }
        return $logger->since(new \DateTimeImmutable('-24 hours'), $limit);
    }

    public static function purge_logs(int $older_than_days): int
    {
        return self::logger()->purge($older_than_days);
    }

    /** Register the #[QueuetyHandler]-named classes under a PSR-4 directory; how many. */
    public static function discover_handlers(string $directory, string $namespace): int
    {
        return (new HandlerDiscovery())->register_all($directory, $namespace, self::registry());
    }

    /*
     * Workflows beyond dispatch and lifecycle.
     */

    /** @return list<WorkflowState> */
    public static function list_workflows(?string $status = null, int $limit = 50): array
    {
        return self::workflow_()->list($status === null ? null : Enums\WorkflowStatus::tryFrom($status), $limit);
    }

    /** A builder for a template (register_workflow_template()). */
    public static function define_workflow(string $name): WorkflowBuilder
    {
        return self::workflow($name);
    }

    public static function register_workflow_template(WorkflowBuilder $builder): void
    {
        self::workflow_templates()->register($builder->get_name(), new WorkflowTemplate(
            name: $builder->get_name(),
            steps: $builder->build_steps(),
            queue: $builder->get_queue(),
            priority: $builder->get_priority(),
            max_attempts: $builder->get_max_attempts(),
            definition: $builder->build_runtime_definition(),
        ));
    }

    /**
     * Dispatch a registered template.
     *
     * @param array<string, mixed> $payload
     * @param array<string, mixed> $options idempotency_key
     * @throws \RuntimeException For an unregistered name.
     */
    public static function run_workflow(string $name, array $payload = [], array $options = []): int
    {
        $template = self::workflow_templates()->get($name) ?? throw new \RuntimeException("Workflow template '{$name}' is not registered.");
        return $template->dispatch($payload, $options);
    }

    /**
     * @param array<string, mixed> $definition
     * @param array<string, mixed> $payload
     * @param array<string, mixed> $options idempotency_key
     */
    public static function dispatch_workflow_definition(array $definition, array $payload = [], array $options = []): int
    {
        return self::workflow_()->dispatch_definition($definition, $payload, $options);
    }

    public static function workflow_templates(): WorkflowRegistry
    {
        self::connection();
        return self::$workflow_registry ??= new WorkflowRegistry();
    }

    /** Register the templates PHP files in the directory return; how many. */
    public static function load_workflows(string $directory, bool $recursive = false): int
    {
        self::connection();
        return WorkflowLoader::load($directory, $recursive);
    }

    public static function load_workflow_file(string $file_path): ?WorkflowTemplate
    {
        self::connection();
        return WorkflowLoader::load_file($file_path);
    }

    public static function rewind_workflow(int $workflow_id, int $to_step): void
    {
        self::workflow_()->rewind($workflow_id, $to_step);
    }

    public static function fork_workflow(int $workflow_id): int
    {
        return self::workflow_()->fork($workflow_id);
    }

    /** @return array<string, mixed> */
    public static function export_workflow(int $workflow_id): array
    {
        return WorkflowExporter::export($workflow_id, self::connection());
    }

    /** Write the export as pretty JSON to $output; the path. */
    public static function export_workflow_to_file(int $workflow_id, string $output): string
    {
        $json = json_encode(self::export_workflow($workflow_id), JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR);
        if (@file_put_contents($output, $json) === false) {
            throw new \RuntimeException("Unable to write workflow export to {$output}.");
        }
        return $output;
    }

    /** @param array<string, mixed> $data An export. */
    public static function replay_workflow(array $data): int
    {
        return WorkflowReplayer::replay($data, self::connection());
    }

    public static function replay_workflow_file(string $file_path): int
    {
        self::connection();
        if (!file_exists($file_path)) {
            throw new \RuntimeException("File not found: {$file_path}");
        }
        $json = file_get_contents($file_path);
        if ($json === false) {
            throw new \RuntimeException("Unable to read workflow export: {$file_path}");
        }
        $data = json_decode($json, true, 512, JSON_THROW_ON_ERROR);
        if (!is_array($data)) {
            throw new \RuntimeException("Workflow export did not decode to an array: {$file_path}");
        }
        $normalized = [];
        foreach ($data as $key => $value) {
            $normalized[(string) $key] = $value;
        }
        return self::replay_workflow($normalized);
    }

    /** @return list<array<string, mixed>> */
    public static function workflow_timeline(int $workflow_id, ?int $limit = 100, int $offset = 0): array
    {
        return self::workflow_events()->get_timeline($workflow_id, $limit, $offset);
    }

    /** @return array<string, mixed> */
    public static function workflow_trace(int $workflow_id): array
    {
        return self::workflow_events()->get_trace($workflow_id);
    }

    /** @return array<string, mixed>|null */
    public static function workflow_state_at(int $workflow_id, int $step_index): ?array
    {
        return self::workflow_events()->get_state_at_step($workflow_id, $step_index);
    }

    public static function workflow_events(): WorkflowEventLog
    {
        return new WorkflowEventLog(self::connection());
    }

    /**
     * Start a workflow when a WordPress action fires (needs WordPress's
     * add_action(); without it the plugin's RuntimeException).
     */
    public static function on_action(
        string $hook,
        string|WorkflowBuilder $workflow,
        ?callable $map = null,
        ?callable $when = null,
        callable|string|null $idempotency_key = null,
        int $priority = 10,
        ?int $accepted_args = null,
    ): void {
        ActionWorkflowBridge::register($hook, $workflow, $map, $when, $idempotency_key, $priority, $accepted_args);
    }

    /**
     * Turn recurring WP-Cron events into Queuety schedules, as the plugin
     * does (needs WordPress's add_filter(); without WordPress there is no
     * WP-Cron, and this throws a LogicException saying so).
     */
    public static function replace_wp_cron(): void
    {
        CronBridge::install();
    }

    /** Undo replace_wp_cron() (needs WordPress's remove_filter(), as above). */
    public static function restore_wp_cron(): void
    {
        CronBridge::uninstall();
    }

    /*
     * Service accessors.
     */

    public static function logger(): Logger
    {
        return new Logger(self::connection());
    }

    public static function worker(): Worker
    {
        return new Worker(self::connection());
    }

    public static function workflow_manager(): Workflow
    {
        return self::workflow_();
    }

    public static function registry(): HandlerRegistry
    {
        self::connection();
        return new HandlerRegistry();
    }

    public static function rate_limiter(): RateLimiter
    {
        self::connection();
        return self::$rate_limiter ??= new RateLimiter(self::connection());
    }

    public static function resource_manager(): ResourceManager
    {
        return new ResourceManager(self::connection());
    }

    public static function batch_manager(): BatchManager
    {
        return self::$fake_batches ?? new BatchManager(self::connection());
    }

    public static function chunk_store(): ChunkStore
    {
        return new ChunkStore(self::connection());
    }

    public static function metrics(): Metrics
    {
        return new Metrics(self::connection());
    }

    public static function cache(): Contracts\Cache
    {
        self::connection();
        return self::$cache ??= new Cache\MemoryCache();
    }

    public static function set_cache(Contracts\Cache $cache): void
    {
        self::$cache = $cache;
    }

    /*
     * Testing.
     */

    /**
     * Record jobs instead of writing them: dispatch(), dispatch_job(),
     * chain(), batch() and create_batch() land in the returned QueueFake
     * (batches get in-memory Batch rows find_batch() finds) until reset().
     */
    public static function fake(): Testing\QueueFake
    {
        self::$queue_fake = new Testing\QueueFake();
        self::$fake_queue = new Testing\FakeQueue(self::$queue_fake);
        self::$fake_batches = new Testing\FakeBatchManager();
        return self::$queue_fake;
    }

    public static function queue_fake(): ?Testing\QueueFake
    {
        return self::$queue_fake;
    }

    /** The Queue new jobs go to: the fake while one is on. */
    private static function writer(): Queue
    {
        return self::$fake_queue ?? self::queue_();
    }

    private static function needs_wordpress(string $method, string $why): \LogicException
    {
        return new \LogicException(sprintf('Queuety::%s() needs WordPress: %s.', $method, $why));
    }
}
