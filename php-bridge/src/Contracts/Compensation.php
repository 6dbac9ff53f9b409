<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * Undoes a completed step (compensate_with()); receives the public state.
 */
interface Compensation
{
    /**
     * @param array<string, mixed> $state
     */
    public function handle(array $state): void;
}
