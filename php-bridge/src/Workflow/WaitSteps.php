<?php

declare(strict_types=1);

namespace Queuety\Workflow;

use Queuety\Enums\WaitMode;
use Queuety\WorkflowBuilder;

/**
 * WorkflowBuilder's wait and start steps: signals (and the human
 * approval, decision and input forms), waits for other workflows or
 * groups of them, and start_workflows / start_agents. Kept apart only to
 * keep WorkflowBuilder readable; the methods are the plugin's.
 *
 * @internal
 */
trait WaitSteps
{
    /**
     * @param array<string, mixed> $match_payload A payload subset the signal must contain.
     */
    public function wait_for_signal(
        string $name,
        ?string $result_key = null,
        ?string $step_name = null,
        array $match_payload = [],
        ?string $correlation_key = null,
    ): self {
        return $this->wait_for_signals([$name], WaitMode::All, $result_key, $step_name ?? 'wait_for_' . $name, $match_payload, $correlation_key);
    }

    /**
     * @param array<int, string>   $signal_names Trimmed; blanks dropped.
     * @param array<string, mixed> $match_payload
     * @throws \RuntimeException Without a name, or for WaitMode::Quorum.
     */
    public function wait_for_signals(
        array $signal_names,
        WaitMode $mode = WaitMode::All,
        ?string $result_key = null,
        ?string $name = null,
        array $match_payload = [],
        ?string $correlation_key = null,
    ): self {
        $names = [];
        foreach ($signal_names as $signal) {
            $signal = trim(is_scalar($signal) ? (string) $signal : '');
            if ($signal !== '') {
                $names[] = $signal;
            }
        }
        if ($names === []) {
            throw new \RuntimeException('Signal wait steps require at least one signal name.');
        }
        if ($mode === WaitMode::Quorum) {
            throw new \RuntimeException('Signal wait steps support only all/any semantics.');
        }
        $this->add_step([
            'type' => 'wait_for_signal',
            'name' => $name ?? (count($names) === 1 ? 'wait_for_' . $names[0] : 'wait_for_signals_' . count($this->steps)),
            'signal_name' => $names[0],
            'signal_names' => $names,
            'wait_mode' => $mode->value,
            'result_key' => $result_key,
            'match_payload' => $match_payload,
            'correlation_key' => $correlation_key,
            'human_wait' => null,
            'decision_map' => null,
            'compensation' => null,
        ]);
        return $this;
    }

    /**
     * @param array<string, mixed> $match_payload
     */
    public function wait_for_approval(
        string $signal_name = 'approval',
        ?string $result_key = 'approval',
        ?string $name = null,
        array $match_payload = [],
        ?string $correlation_key = null,
    ): self {
        $this->wait_for_signals([$signal_name], WaitMode::All, $result_key, $name ?? 'wait_for_approval', $match_payload, $correlation_key);
        $this->steps[count($this->steps) - 1]['human_wait'] = 'approval';
        return $this;
    }

    /**
     * Settles on the first of the two signals; the output says which
     * (outcome "approved" or "rejected").
     *
     * @param array<string, mixed> $match_payload
     */
    public function wait_for_decision(
        string $approve_signal = 'approved',
        string $reject_signal = 'rejected',
        ?string $result_key = 'decision',
        ?string $name = null,
        array $match_payload = [],
        ?string $correlation_key = null,
    ): self {
        $this->wait_for_signals([$approve_signal, $reject_signal], WaitMode::Any, $result_key, $name ?? 'wait_for_decision', $match_payload, $correlation_key);
        $last = count($this->steps) - 1;
        $this->steps[$last]['human_wait'] = 'decision';
        // Untrimmed keys, and one entry when both signals are the same:
        // that is the map the plugin stores.
        $this->steps[$last]['decision_map'] = [$approve_signal => 'approved', $reject_signal => 'rejected'];
        return $this;
    }

    /**
     * @param array<string, mixed> $match_payload
     */
    public function wait_for_input(
        string $signal_name = 'input',
        ?string $result_key = 'input',
        ?string $name = null,
        array $match_payload = [],
        ?string $correlation_key = null,
    ): self {
        $this->wait_for_signals([$signal_name], WaitMode::All, $result_key, $name ?? 'wait_for_input', $match_payload, $correlation_key);
        $this->steps[count($this->steps) - 1]['human_wait'] = 'input';
        return $this;
    }

    /**
     * @param int|string $workflow A workflow id, or a public state key holding one.
     */
    public function wait_for_workflow(int|string $workflow, ?string $result_key = null, ?string $name = null): self
    {
        return $this->wait_for_workflows(is_int($workflow) ? [$workflow] : $workflow, WaitMode::All, $result_key, $name ?? 'wait_for_workflow');
    }

    /**
     * @param array<int, int>|string $workflows Workflow ids (those below 1 dropped), or a public state key holding them.
     * @throws \RuntimeException For a blank key, or a quorum wait without a quorum of at least 1.
     */
    public function wait_for_workflows(
        array|string $workflows,
        WaitMode $mode = WaitMode::All,
        ?string $result_key = null,
        ?string $name = null,
        ?int $quorum = null,
    ): self {
        if ($mode === WaitMode::Quorum && ($quorum === null || $quorum < 1)) {
            throw new \RuntimeException('Workflow quorum waits require a quorum of at least 1.');
        }
        $ids = null;
        $key = null;
        if (is_string($workflows)) {
            $key = trim($workflows);
            if ($key === '') {
                throw new \RuntimeException('Workflow wait steps require a non-empty state key.');
            }
        } else {
            $ids = array_values(array_filter(array_map(static fn (mixed $id): int => (int) $id, $workflows), static fn (int $id): bool => $id > 0));
        }
        $this->add_step([
            'type' => 'wait_for_workflows',
            'name' => $name ?? 'wait_for_workflows_' . count($this->steps),
            'workflow_ids' => $ids,
            'workflow_id_key' => $key,
            'workflow_group_key' => null,
            'wait_mode' => $mode->value,
            // A quorum given with another mode is not stored.
            'quorum' => $mode === WaitMode::Quorum ? $quorum : null,
            'result_key' => $result_key,
            'compensation' => null,
        ]);
        return $this;
    }

    /**
     * Waits for the workflows a start_workflows()/start_agents() step
     * recorded under $group_key.
     *
     * @throws \RuntimeException For a blank key, or a quorum wait without a quorum of at least 1.
     */
    public function wait_for_workflow_group(
        string $group_key,
        WaitMode $mode = WaitMode::All,
        ?int $quorum = null,
        ?string $result_key = null,
        ?string $name = null,
    ): self {
        $group_key = trim($group_key);
        if ($group_key === '') {
            throw new \RuntimeException('Workflow group waits require a non-empty group key.');
        }
        if ($mode === WaitMode::Quorum && ($quorum === null || $quorum < 1)) {
            throw new \RuntimeException('Workflow quorum waits require a quorum of at least 1.');
        }
        $this->add_step([
            'type' => 'wait_for_workflows',
            'name' => $name ?? 'wait_for_workflow_group_' . count($this->steps),
            'workflow_ids' => null,
            'workflow_id_key' => null,
            'workflow_group_key' => $group_key,
            'wait_mode' => $mode->value,
            'quorum' => $mode === WaitMode::Quorum ? $quorum : null,
            'result_key' => $result_key,
            'compensation' => null,
        ]);
        return $this;
    }

    /**
     * Starts one top-level workflow per item of $items_key (the child's
     * definition is taken from $workflow_builder now, not at dispatch).
     *
     * @throws \InvalidArgumentException For a blank items, result or payload key.
     */
    public function start_workflows(
        string $items_key,
        WorkflowBuilder $workflow_builder,
        string $result_key = 'started_workflow_ids',
        string $payload_key = 'item',
        bool $inherit_state = true,
        ?string $name = null,
        ?string $group_key = null,
    ): self {
        $items_key = trim($items_key);
        $result_key = trim($result_key);
        $payload_key = trim($payload_key);
        $group_key = $group_key !== null ? trim($group_key) : null;
        foreach (['items' => $items_key, 'result' => $result_key, 'payload' => $payload_key] as $what => $value) {
            if ($value === '') {
                throw new \InvalidArgumentException("Workflow start steps require a non-empty {$what} key.");
            }
        }
        $this->add_step([
            'type' => 'start_workflows',
            'name' => $name ?? 'start_workflows_' . count($this->steps),
            'items_key' => $items_key,
            'result_key' => $result_key,
            'payload_key' => $payload_key,
            'inherit_state' => $inherit_state,
            'group_key' => $group_key === '' ? null : $group_key,
            'workflow_definition' => $workflow_builder->build_runtime_definition(),
            'compensation' => null,
        ]);
        return $this;
    }

    public function start_agents(
        string $items_key,
        WorkflowBuilder $workflow_builder,
        string $result_key = 'agent_workflow_ids',
        string $payload_key = 'agent_task',
        bool $inherit_state = true,
        ?string $name = null,
        ?string $group_key = null,
    ): self {
        return $this->start_workflows($items_key, $workflow_builder, $result_key, $payload_key, $inherit_state, $name ?? 'start_agents', $group_key);
    }

    /**
     * @param array<int, int>|string $workflows
     */
    public function wait_for_agents(
        array|string $workflows = 'agent_workflow_ids',
        WaitMode $mode = WaitMode::All,
        ?string $result_key = 'agent_results',
        ?string $name = null,
        ?int $quorum = null,
    ): self {
        return $this->wait_for_workflows($workflows, $mode, $result_key, $name ?? 'wait_for_agents', $quorum);
    }

    public function wait_for_agent_group(
        string $group_key = 'agents',
        WaitMode $mode = WaitMode::All,
        ?int $quorum = null,
        ?string $result_key = 'agent_results',
        ?string $name = null,
    ): self {
        return $this->wait_for_workflow_group($group_key, $mode, $quorum, $result_key, $name ?? 'wait_for_agent_group');
    }
}
