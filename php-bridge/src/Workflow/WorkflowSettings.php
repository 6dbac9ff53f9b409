<?php

declare(strict_types=1);

namespace Queuety\Workflow;

use Queuety\Enums\Priority;

/**
 * A workflow builder's workflow-level settings, and what they become: the
 * reserved state keys dispatch appends, the definition hash, and the
 * runtime definition bundle. Key orders are the plugin's; they are part of
 * the bytes.
 *
 * @internal
 */
final class WorkflowSettings
{
    /** Budget limits in the order the plugin writes them. */
    private const BUDGETS = ['max_transitions', 'max_for_each_items', 'max_state_bytes', 'max_cost_units', 'max_started_workflows'];

    public string $queue = 'default';
    public Priority $priority = Priority::Low;
    public int $max_attempts = 3;
    public ?string $cancel_handler = null;
    public ?int $prune_after = null;
    public ?int $deadline_seconds = null;
    public ?string $deadline_handler = null;
    public ?string $definition_version = null;
    public ?string $idempotency_key = null;
    public bool $compensate_on_failure = false;
    /** @var array<string, int|null> */
    private array $budget = [
        'max_transitions' => null, 'max_for_each_items' => null, 'max_state_bytes' => null,
        'max_cost_units' => null, 'max_started_workflows' => null,
    ];

    /**
     * @throws \InvalidArgumentException For a blank value.
     */
    public static function non_blank(string $value, string $message): string
    {
        $value = trim($value);
        if ($value === '') {
            throw new \InvalidArgumentException($message);
        }
        return $value;
    }

    /**
     * @throws \InvalidArgumentException For less than 1.
     */
    public function set_budget(string $name, int $limit): void
    {
        if ($limit < 1) {
            throw new \InvalidArgumentException(sprintf('Workflow %s must be at least 1.', $name));
        }
        $this->budget[$name] = $limit;
    }

    public function max_state_bytes(): ?int
    {
        return $this->budget['max_state_bytes'];
    }

    /**
     * The configured limits only (`[]` when none).
     *
     * @return array<string, int>
     */
    public function budget(): array
    {
        $out = [];
        foreach (self::BUDGETS as $name) {
            if ($this->budget[$name] !== null) {
                $out[$name] = $this->budget[$name];
            }
        }
        return $out;
    }

    /**
     * The leading fields the definition hash and the runtime definition
     * share, in the plugin's key order (the hash depends on it).
     *
     * @param list<array<string, mixed>> $steps
     * @return array<string, mixed>
     */
    private function definition_fields(string $name, array $steps): array
    {
        return [
            'name' => $name,
            'steps' => $steps,
            'queue' => $this->queue,
            'priority' => $this->priority->value,
            'max_attempts' => $this->max_attempts,
            'cancel_handler' => $this->cancel_handler,
            'prune_after' => $this->prune_after,
            'deadline_seconds' => $this->deadline_seconds,
            'deadline_handler' => $this->deadline_handler,
            'definition_version' => $this->definition_version,
        ];
    }

    /**
     * sha256 of the definition's JSON. max_cost_units and
     * max_started_workflows are not part of it, as in the plugin.
     *
     * @param list<array<string, mixed>> $steps
     */
    public function definition_hash(string $name, array $steps): string
    {
        return hash('sha256', json_encode($this->definition_fields($name, $steps) + [
            'max_transitions' => $this->budget['max_transitions'],
            'max_for_each_items' => $this->budget['max_for_each_items'],
            'max_state_bytes' => $this->budget['max_state_bytes'],
            'compensate_on_failure' => $this->compensate_on_failure,
        ], JSON_THROW_ON_ERROR));
    }

    /**
     * build_runtime_definition()'s bundle.
     *
     * @param list<array<string, mixed>> $steps
     * @return array<string, mixed>
     */
    public function runtime_definition(string $name, array $steps): array
    {
        return $this->definition_fields($name, $steps) + [
            'definition_hash' => $this->definition_hash($name, $steps),
            'workflow_budget' => $this->budget(),
            'compensate_on_failure' => $this->compensate_on_failure,
        ];
    }

    /**
     * The caller's state with the reserved keys dispatch appends, in the
     * plugin's order (optional ones only when set).
     *
     * @param list<array<string, mixed>> $steps
     * @param array<string, mixed>       $initial
     * @return array<string, mixed>
     * @throws \RuntimeException When the initial state exceeds max_state_bytes.
     */
    public function initial_state(string $name, array $steps, array $initial): array
    {
        $limit = $this->budget['max_state_bytes'];
        // Checked on the caller's state as given (its own _ keys included).
        if ($limit !== null && strlen(json_encode($initial, JSON_THROW_ON_ERROR)) > $limit) {
            throw new \RuntimeException(sprintf('Workflow initial state exceeds configured max_state_bytes budget of %d.', $limit));
        }
        $state = $initial;
        $state['_steps'] = $steps;
        $state['_queue'] = $this->queue;
        $state['_priority'] = $this->priority->value;
        $state['_max_attempts'] = $this->max_attempts;
        $state['_definition_hash'] = $this->definition_hash($name, $steps);
        if ($this->cancel_handler !== null) {
            $state['_on_cancel'] = $this->cancel_handler;
        }
        if ($this->prune_after !== null) {
            $state['_prune_state_after'] = $this->prune_after;
            $state['_step_outputs'] = [];
        }
        if ($this->deadline_seconds !== null) {
            $state['_deadline_seconds'] = $this->deadline_seconds;
        }
        if ($this->deadline_handler !== null) {
            $state['_on_deadline'] = $this->deadline_handler;
        }
        if ($this->definition_version !== null) {
            $state['_definition_version'] = $this->definition_version;
        }
        if ($this->idempotency_key !== null) {
            $state['_idempotency_key'] = $this->idempotency_key;
        }
        $budget = $this->budget();
        if ($budget !== []) {
            $state['_workflow_budget'] = $budget;
            $state['_workflow_counters'] = ['transitions' => 0, 'cost_units' => 0, 'started_workflows' => 0];
        }
        if ($this->compensate_on_failure) {
            $state['_compensate_on_failure'] = true;
        }
        return $state;
    }
}
