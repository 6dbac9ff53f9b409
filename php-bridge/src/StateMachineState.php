<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\StateMachineStatus;

/**
 * A state machine's row as Queuety::machine_status() returns it.
 */
readonly class StateMachineState
{
    /**
     * @param array<string, mixed> $state
     * @param list<string>         $available_events
     */
    public function __construct(
        public int $machine_id,
        public string $name,
        public StateMachineStatus $status,
        public string $current_state,
        public array $state,
        public array $available_events = [],
        public ?string $definition_version = null,
        public ?string $definition_hash = null,
        public ?string $idempotency_key = null,
        public ?string $error_message = null,
        public ?string $current_action = null,
        public ?string $terminal_status = null,
    ) {
    }
}
