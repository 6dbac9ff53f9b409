<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\WorkflowStatus;

/**
 * A workflow's status as Queuety::workflow_status() returns it: the
 * plugin's properties, in its order, then what the bridge adds from the
 * same row (current_step_type, the timestamps and error_message), which
 * the plugin exposes only through other calls.
 */
readonly class WorkflowState
{
    /**
     * @param array<string, mixed>      $state        The public state (no "_" keys).
     * @param list<string>|null         $waiting_for  The awaited signal names or workflow ids.
     * @param array<string, int>|null   $budget       Limits and counters, when a budget is set.
     * @param array<string, mixed>|null $wait_details Always null from the bridge (see README).
     * @param list<string>|null         $artifact_keys
     */
    public function __construct(
        public int $workflow_id,
        public string $name,
        public WorkflowStatus $status,
        public int $current_step,
        public int $total_steps,
        public array $state,
        public ?int $parent_workflow_id = null,
        public ?int $parent_step_index = null,
        public ?string $wait_type = null,
        public ?array $waiting_for = null,
        public ?string $definition_version = null,
        public ?string $definition_hash = null,
        public ?string $idempotency_key = null,
        public ?array $budget = null,
        public ?string $current_step_name = null,
        public ?string $wait_mode = null,
        public ?array $wait_details = null,
        public ?int $artifact_count = null,
        public ?array $artifact_keys = null,
        public ?string $current_step_type = null,
        public ?string $started_at = null,
        public ?string $completed_at = null,
        public ?string $failed_at = null,
        public ?string $deadline_at = null,
        public ?string $error_message = null,
    ) {
    }
}
