<?php

declare(strict_types=1);

namespace Queuety\Workflow;

use Queuety\Queue;
use Queuety\StepDispatchOptions;

/**
 * The job(s) that start a step, as the plugin enqueues a step (its
 * builder step 0; resume() and retry() the current step): one per
 * parallel branch, the handler class for a single step (or a legacy
 * string step), and a placeholder job (payload {"step_index": i}, cost 0)
 * that the workflow runtime recognises for every other step type.
 *
 * @internal
 */
final class FirstStepJobs
{
    /** Placeholder handler per step type. */
    private const PLACEHOLDERS = [
        'run_workflow' => '__queuety_run_workflow',
        'delay' => '__queuety_delay',
        'for_each' => '__queuety_for_each',
        'wait_for_signal' => '__queuety_wait_for_signal',
        'wait_for_workflows' => '__queuety_wait_for_workflows',
        'repeat' => '__queuety_repeat',
        'start_workflows' => '__queuety_start_workflows',
    ];

    public function __construct(
        private readonly Queue $queue_ops,
        private readonly WorkflowSettings $settings,
    ) {
    }

    /**
     * The step jobs of a running workflow, with the queue, priority and
     * attempts its state carries (`_queue`, `_priority`, `_max_attempts`).
     *
     * @param array<string, mixed> $state
     */
    public static function for_state(Queue $queue_ops, array $state): self
    {
        $settings = new WorkflowSettings();
        $queue = is_scalar($state['_queue'] ?? 'default') ? (string) ($state['_queue'] ?? 'default') : '';
        $settings->queue = $queue === '' ? 'default' : $queue;
        $settings->priority = \Queuety\Enums\Priority::tryFrom(is_scalar($state['_priority'] ?? 0) ? (int) ($state['_priority'] ?? 0) : 0) ?? \Queuety\Enums\Priority::Low;
        $attempts = is_scalar($state['_max_attempts'] ?? 3) ? (int) ($state['_max_attempts'] ?? 3) : 3;
        $settings->max_attempts = $attempts > 0 ? $attempts : 3;
        return new self($queue_ops, $settings);
    }

    /**
     * @param array<string, mixed>|string $step A serialized step; a string is a legacy single step (its class).
     */
    public function enqueue(array|string $step, int $workflow_id, int $step_index): void
    {
        if (is_string($step)) {
            $this->dispatch_job($step, $step, [], $workflow_id, $step_index);
            return;
        }
        $type = $step['type'] ?? '';
        if ($type === 'parallel') {
            foreach (StepDispatchOptions::parallel_branches($step) as $branch) {
                $def = StepDispatchOptions::merge_parallel_branch($step, $branch);
                $this->dispatch_job($def, StepDispatchOptions::branch_handler($def), StepDispatchOptions::payload($def), $workflow_id, $step_index);
            }
            return;
        }
        if (isset(self::PLACEHOLDERS[$type])) {
            // A delay step's own length is its job's delay.
            $delay = $type === 'delay' ? (is_scalar($step['delay_seconds'] ?? 0) ? (int) ($step['delay_seconds'] ?? 0) : 0) : null;
            $this->dispatch_job($step, self::PLACEHOLDERS[$type], ['step_index' => $step_index], $workflow_id, $step_index, 0, $delay);
            return;
        }
        $class = $step['class'] ?? '';
        $this->dispatch_job($step, is_string($class) ? $class : '', StepDispatchOptions::payload($step), $workflow_id, $step_index);
    }

    /**
     * @param array<mixed>|string $def
     * @param array<mixed>        $payload
     */
    private function dispatch_job(array|string $def, string $handler, array $payload, int $workflow_id, int $step_index, int $default_cost = 1, ?int $delay = null): void
    {
        $options = StepDispatchOptions::resolve(
            definition: $def,
            handler: $handler,
            workflow_queue: $this->settings->queue,
            workflow_priority: $this->settings->priority,
            workflow_attempts: $this->settings->max_attempts,
            payload: $payload,
            default_cost_units: $default_cost,
            // Placeholders only orchestrate (a for_each's plans its items,
            // which are bound): they are never session-bound themselves.
            worker_session: in_array($handler, self::PLACEHOLDERS, true) || !is_array($def) ? null : ($def['worker_session'] ?? null),
        );
        $this->queue_ops->dispatch(
            handler: $handler,
            payload: $options['payload'],
            queue: $options['queue'],
            priority: $options['priority'],
            delay: $delay ?? $options['delay'],
            max_attempts: $options['max_attempts'],
            workflow_id: $workflow_id,
            step_index: $step_index,
            concurrency_group: $options['concurrency_group'],
            concurrency_limit: $options['concurrency_limit'],
            cost_units: $options['cost_units'],
            session_id: $options['session_id'],
            worker_session: $options['worker_session'],
        );
    }
}
