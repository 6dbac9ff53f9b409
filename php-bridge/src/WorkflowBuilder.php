<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\ForEachMode;
use Queuety\Enums\Priority;
use Queuety\Workflow\Dispatcher;
use Queuety\Workflow\WaitSteps;
use Queuety\Workflow\WorkflowSettings;

/**
 * Queuety's fluent workflow builder: the plugin's method names,
 * signatures, validation messages and serialization, so the same chain
 * writes the same workflow row and first jobs on either runtime.
 *
 *     $id = Queuety::workflow('generate_report')
 *         ->then(FetchData::class)
 *         ->parallel([Summarize::class, Translate::class])
 *         ->wait_for_approval()
 *         ->then(Publish::class)
 *         ->dispatch(['user_id' => 42]);
 *
 * Steps are kept in their serialized shape (keys in the plugin's order)
 * from the moment they are added; only run_workflow keeps its
 * sub-builder, which is read when this one is built, as in the plugin.
 * Workflow-level settings live in WorkflowSettings; the wait and
 * start steps in the WaitSteps trait.
 */
class WorkflowBuilder
{
    use WaitSteps;

    /** @var list<array<string, mixed>> */
    private array $steps = [];
    private WorkflowSettings $settings;

    /**
     * The plugin also takes its Logger here; the bridge writes the one log
     * row dispatch needs itself. Without a connection the builder still
     * builds definitions (build_steps(), build_runtime_definition()), as
     * start_workflows() sub-builders need.
     */
    public function __construct(
        private readonly string $name,
        private readonly ?Connection $conn = null,
        private readonly ?Queue $queue_ops = null,
    ) {
        $this->settings = new WorkflowSettings();
    }

    public function then(string $handler_class, ?string $name = null): self
    {
        $this->steps[] = ['type' => 'single', 'name' => $name ?? (string) count($this->steps), 'class' => $handler_class];
        return $this;
    }

    /**
     * A local activity (seed 002): the queuety-go worker that committed the
     * step before runs $activity_class at once in its own process, without
     * the queue, with the retry and timeout options given (see
     * LocalActivityOptions). An array is read as ActivityOptions would be,
     * and routing options in it are refused. The plugin's own runtime does
     * not know the type and would run it as a single step.
     *
     * @param LocalActivityOptions|array<string, mixed>|null $options
     */
    public function local_activity(string $activity_class, LocalActivityOptions|array|null $options = null, ?string $name = null): self
    {
        if ($activity_class === '') {
            throw new \InvalidArgumentException('Local activity class cannot be empty.');
        }
        if (is_array($options)) {
            $options = LocalActivityOptions::fromArray($options);
        }
        $options ??= new LocalActivityOptions();
        $this->steps[] = [
            'type' => 'local_activity',
            'name' => $name ?? (string) count($this->steps),
            'class' => $activity_class,
            'local_activity' => $options->snapshot(),
        ];
        return $this;
    }

    /**
     * Branches run at once; the step completes when all have. Handler
     * names are stored as given (the jobs get them trimmed).
     *
     * @param array<int, string> $handler_classes
     */
    public function parallel(array $handler_classes): self
    {
        $this->steps[] = ['type' => 'parallel', 'name' => (string) count($this->steps), 'handlers' => array_values($handler_classes)];
        return $this;
    }

    public function for_each(
        string $items_key,
        string $handler_class,
        ?string $result_key = null,
        ForEachMode $mode = ForEachMode::All,
        ?int $quorum = null,
        ?string $reducer_class = null,
        ?string $name = null,
    ): self {
        $this->steps[] = [
            'type' => 'for_each',
            'name' => $name ?? (string) count($this->steps),
            'items_key' => $items_key,
            'class' => $handler_class,
            'result_key' => $result_key,
            'mode' => $mode->value,
            'quorum' => $quorum,
            'reducer_class' => $reducer_class,
            'compensation' => null,
        ];
        return $this;
    }

    /**
     * @throws \RuntimeException If the target or the condition is invalid.
     */
    public function repeat_while(
        string $target_step,
        ?string $state_key = null,
        mixed $expected = true,
        ?string $name = null,
        ?string $condition_class = null,
        ?int $max_iterations = null,
    ): self {
        return $this->add_repeat_step('while', $target_step, $state_key, $expected, $name, $condition_class, $max_iterations);
    }

    /**
     * @throws \RuntimeException If the target or the condition is invalid.
     */
    public function repeat_until(
        string $target_step,
        ?string $state_key = null,
        mixed $expected = true,
        ?string $name = null,
        ?string $condition_class = null,
        ?int $max_iterations = null,
    ): self {
        return $this->add_repeat_step('until', $target_step, $state_key, $expected, $name, $condition_class, $max_iterations);
    }

    /**
     * A nested workflow the parent waits for. The sub-builder is read when
     * this builder is built, so steps added to it later still count.
     */
    public function run_workflow(string $workflow_name, WorkflowBuilder $sub_builder): self
    {
        $this->steps[] = [
            'type' => 'run_workflow',
            'name' => (string) count($this->steps),
            'workflow_name' => $workflow_name,
            'builder' => $sub_builder,
            'compensation' => null,
        ];
        return $this;
    }

    /**
     * A durable pause: the next step's job becomes available after it.
     */
    public function delay(int $seconds = 0, int $minutes = 0, int $hours = 0, int $days = 0): self
    {
        $earlier = count(array_filter($this->steps, static fn (array $step): bool => $step['type'] === 'delay'));
        $this->steps[] = [
            'type' => 'delay',
            'name' => 'delay_' . $earlier,
            'delay_seconds' => $seconds + $minutes * 60 + $hours * 3600 + $days * 86400,
            'compensation' => null,
        ];
        return $this;
    }

    /**
     * A handle whose then() / parallel() / for_each() add steps bound to
     * worker session $session_id (seed 000's Workflow::workerSession()).
     *
     * @throws \InvalidArgumentException For a blank session id (the library's message).
     */
    public function worker_session(string $session_id, ?WorkerSessionOptions $options = null): WorkerSession
    {
        $options = ($options ?? new WorkerSessionOptions())->withSessionId($session_id);
        return new WorkerSession($this, $options->toSnapshot());
    }

    /**
     * Adds the worker_session key to the step just added, after its own
     * keys and before "compensation" (the Go builder writes this order).
     *
     * @internal Used by WorkerSession.
     * @param array<string, mixed> $snapshot
     */
    public function bind_last_step_to_worker_session(array $snapshot): void
    {
        $last = count($this->steps) - 1;
        if ($last < 0) {
            return;
        }
        $step = $this->steps[$last];
        $has_compensation = array_key_exists('compensation', $step);
        $compensation = $step['compensation'] ?? null;
        unset($step['compensation'], $step['worker_session']);
        $step['worker_session'] = $snapshot;
        if ($has_compensation) {
            $step['compensation'] = $compensation;
        }
        $this->steps[$last] = $step;
    }

    /**
     * @throws \RuntimeException Before any step is added.
     */
    public function compensate_with(string $handler_class): self
    {
        if ($this->steps === []) {
            throw new \RuntimeException('Cannot attach compensation before adding a step.');
        }
        $this->steps[count($this->steps) - 1]['compensation'] = $handler_class;
        return $this;
    }

    public function compensate_on_failure(): self
    {
        $this->settings->compensate_on_failure = true;
        return $this;
    }

    public function on_cancel(string $handler_class): self
    {
        $this->settings->cancel_handler = $handler_class;
        return $this;
    }

    public function prune_state_after(int $steps = 2): self
    {
        $this->settings->prune_after = $steps;
        return $this;
    }

    public function must_complete_within(int $seconds = 0, int $minutes = 0, int $hours = 0, int $days = 0): self
    {
        $this->settings->deadline_seconds = $seconds + $minutes * 60 + $hours * 3600 + $days * 86400;
        return $this;
    }

    public function on_deadline(string $handler_class): self
    {
        $this->settings->deadline_handler = $handler_class;
        return $this;
    }

    /**
     * @throws \InvalidArgumentException For a blank version.
     */
    public function version(string $version): self
    {
        $this->settings->definition_version = WorkflowSettings::non_blank($version, 'Workflow version cannot be empty.');
        return $this;
    }

    /**
     * Dispatching again with the same key returns the first workflow's id.
     *
     * @throws \InvalidArgumentException For a blank key.
     */
    public function idempotency_key(string $key): self
    {
        $this->settings->idempotency_key = WorkflowSettings::non_blank($key, 'Workflow idempotency key cannot be empty.');
        return $this;
    }

    public function max_transitions(int $max): self
    {
        $this->settings->set_budget('max_transitions', $max);
        return $this;
    }

    public function max_for_each_items(int $max): self
    {
        $this->settings->set_budget('max_for_each_items', $max);
        return $this;
    }

    public function max_state_bytes(int $bytes): self
    {
        $this->settings->set_budget('max_state_bytes', $bytes);
        return $this;
    }

    public function max_cost_units(int $max): self
    {
        $this->settings->set_budget('max_cost_units', $max);
        return $this;
    }

    public function max_started_workflows(int $max): self
    {
        $this->settings->set_budget('max_started_workflows', $max);
        return $this;
    }

    public function on_queue(string $queue): self
    {
        $this->settings->queue = $queue;
        return $this;
    }

    public function with_priority(Priority $priority): self
    {
        $this->settings->priority = $priority;
        return $this;
    }

    public function max_attempts(int $max): self
    {
        $this->settings->max_attempts = $max;
        return $this;
    }

    public function get_name(): string
    {
        return $this->name;
    }

    public function get_queue(): string
    {
        return $this->settings->queue;
    }

    public function get_priority(): Priority
    {
        return $this->settings->priority;
    }

    public function get_max_attempts(): int
    {
        return $this->settings->max_attempts;
    }

    /**
     * The `_steps` list, as stored in the workflow's state.
     *
     * @return list<array<string, mixed>>
     */
    public function build_steps(): array
    {
        $result = [];
        foreach ($this->steps as $step) {
            if ($step['type'] === 'run_workflow') {
                $sub = $step['builder'];
                \assert($sub instanceof self);
                $step = [
                    'type' => 'run_workflow',
                    'name' => $step['name'],
                    'workflow_name' => $step['workflow_name'],
                    'workflow_steps' => $sub->build_steps(),
                    'workflow_queue' => $sub->get_queue(),
                    'workflow_priority' => $sub->get_priority()->value,
                    'workflow_max_attempts' => $sub->get_max_attempts(),
                    'compensation' => $step['compensation'],
                ];
            }
            $result[] = $step;
        }
        return $result;
    }

    /**
     * The definition bundle start_workflows() embeds (and templates use).
     *
     * @return array<string, mixed>
     */
    public function build_runtime_definition(): array
    {
        $steps = $this->build_steps();
        return $this->settings->runtime_definition($this->name, $steps);
    }

    /**
     * Insert the workflow row, its first step's job(s), the
     * workflow_started log row and (with an idempotency key) the dispatch
     * key, in one transaction, and return the workflow's id. The bridge
     * does not run or advance the workflow: a `queuety work --workflows`
     * daemon (or the plugin's worker) does.
     *
     * @param array<string, mixed> $initial_payload The starting public state.
     * @throws \RuntimeException Without steps, or when the initial state exceeds max_state_bytes.
     */
    public function dispatch(array $initial_payload = []): int
    {
        if ($this->steps === []) {
            throw new \RuntimeException('Workflow must have at least one step.');
        }
        $steps = $this->build_steps();
        $state = $this->settings->initial_state($this->name, $steps, $initial_payload);
        if ($this->conn === null || $this->queue_ops === null) {
            throw new \RuntimeException('This WorkflowBuilder has no connection: start it with Queuety::workflow() after Queuety::init().');
        }
        return (new Dispatcher($this->conn, $this->queue_ops, $this->settings))->dispatch($this->name, $steps, $state);
    }

    /**
     * @param array<string, mixed> $step A step in its serialized shape.
     */
    private function add_step(array $step): void
    {
        $this->steps[] = $step;
    }

    private function has_prior_step_named(string $name): bool
    {
        foreach ($this->steps as $step) {
            if (($step['name'] ?? null) === $name) {
                return true;
            }
        }
        return false;
    }

    private function add_repeat_step(
        string $mode,
        string $target_step,
        ?string $state_key,
        mixed $expected,
        ?string $name,
        ?string $condition_class,
        ?int $max_iterations,
    ): self {
        $target_step = trim($target_step);
        $state_key = $state_key !== null ? trim($state_key) : null;
        $condition_class = $condition_class !== null ? trim($condition_class) : null;

        $error = match (true) {
            $target_step === '' => 'Repeat steps require a non-empty target step name.',
            $state_key === '' => 'Repeat steps require a non-empty state key.',
            $condition_class === '' => 'Repeat steps require a non-empty condition class.',
            $state_key === null && $condition_class === null => 'Repeat steps require either a state key or a condition class.',
            $state_key !== null && $condition_class !== null => 'Repeat steps cannot define both a state key and a condition class.',
            $max_iterations !== null && $max_iterations < 1 => 'Repeat steps require max_iterations to be at least 1.',
            !$this->has_prior_step_named($target_step) => sprintf("Repeat target '%s' must reference an earlier named step.", $target_step),
            default => null,
        };
        if ($error !== null) {
            throw new \RuntimeException($error);
        }

        $this->add_step([
            'type' => 'repeat',
            'name' => $name ?? 'repeat_' . $mode . '_' . count($this->steps),
            'repeat_mode' => $mode,
            'target_step' => $target_step,
            'state_key' => $state_key,
            'expected' => $expected,
            'condition_class' => $condition_class,
            'max_iterations' => $max_iterations,
            'compensation' => null,
        ]);
        return $this;
    }
}
