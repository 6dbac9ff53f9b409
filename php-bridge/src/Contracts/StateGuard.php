<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * A state machine transition guard: the transition is taken only when
 * allows() returns true.
 */
interface StateGuard
{
    /**
     * @param array<string, mixed> $state
     * @param array<string, mixed> $event_payload
     * @param array<string, mixed> $payload
     */
    public function allows(array $state, array $event_payload, string $event, array $payload = []): bool;
}
