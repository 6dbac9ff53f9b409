<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\Priority;

/**
 * A registered workflow: its built steps and runtime definition, from
 * which Queuety::run_workflow() dispatches new instances.
 */
class WorkflowTemplate
{
    /**
     * @param list<array<string, mixed>> $steps
     * @param array<string, mixed>       $definition WorkflowBuilder::build_runtime_definition()
     */
    public function __construct(
        public string $name,
        public array $steps,
        public string $queue,
        public Priority $priority,
        public int $max_attempts,
        public array $definition,
    ) {
    }

    /**
     * @param array<string, mixed> $payload
     * @param array<string, mixed> $options idempotency_key
     */
    public function dispatch(array $payload = [], array $options = []): int
    {
        return Queuety::dispatch_workflow_definition($this->definition, $payload, $options);
    }
}
