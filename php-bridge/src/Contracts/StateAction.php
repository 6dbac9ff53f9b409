<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * A state machine action. Named here because its config() is read as
 * dispatch defaults like a step's.
 */
interface StateAction
{
    /**
     * @param array<string, mixed> $state
     * @param array<string, mixed> $event_payload
     * @param array<string, mixed> $payload
     * @return array<string, mixed>|string
     */
    public function handle(array $state, ?string $event = null, array $event_payload = [], array $payload = []): array|string;
}
