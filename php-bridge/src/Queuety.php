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

    public static function init(Connection $conn): void
    {
        self::$conn = $conn;
        self::$queue = new Queue($conn);
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
            $pending = new PendingJob($serialized['handler'], $serialized['payload'], self::queue_());
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
        return self::apply_pending_defaults(new PendingJob($handler, $payload, self::queue_()), $handler);
    }

    /**
     * The plugin's CLI-style dispatch: an invalid priority means Low.
     *
     * @param array<mixed> $payload
     */
    public static function dispatch_job(string $handler, array $payload = [], string $queue = 'default', int $priority = 0, int $delay = 0): int
    {
        return self::queue_()->dispatch(
            handler: $handler,
            payload: $payload,
            queue: $queue,
            priority: Priority::tryFrom($priority) ?? Priority::Low,
            delay: $delay,
        );
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
        return new ChainBuilder($jobs, self::queue_());
    }

    /**
     * A batch of jobs with then/catch/finally callbacks.
     *
     * @param list<mixed> $jobs Contracts\Job objects or ['handler' => …, 'payload' => …, 'queue' => …, …].
     */
    public static function create_batch(array $jobs): BatchBuilder
    {
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
     * State machines: the daemon runs their action jobs and `queuety machine
     * event` sends events; this package has no state machine engine, so
     * these plugin calls fail with a message that says where they work. With
     * --wp-load and the plugin active, the plugin's facade answers them.
     */

    /** @param array<mixed> $payload */
    public static function machine_event(int $machine_id, string $event_name, array $payload = []): void
    {
        throw self::no_machines('machine_event');
    }

    public static function machine(string $name): never
    {
        throw self::no_machines('machine');
    }

    public static function machine_status(int $machine_id): never
    {
        throw self::no_machines('machine_status');
    }

    public static function list_machines(int $limit = 50, ?string $status = null): never
    {
        throw self::no_machines('list_machines');
    }

    /**
     * @param array<mixed> $definition
     * @param array<mixed> $initial_state
     * @param array<mixed> $options
     */
    public static function dispatch_state_machine_definition(array $definition, array $initial_state = [], array $options = []): never
    {
        throw self::no_machines('dispatch_state_machine_definition');
    }

    private static function no_machines(string $method): \LogicException
    {
        return new \LogicException(sprintf(
            'Queuety::%s() needs the Queuety plugin: this bridge has no state machine engine. Load the plugin (the pool\'s --wp-load with the plugin active), or use `queuety machine list|status|event` or the Go API (Client.MachineEvent).',
            $method,
        ));
    }
}
