<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * Turns a settled for_each aggregate into the step's output.
 */
interface ForEachReducer
{
    /**
     * @param array<string, mixed> $state
     * @param array<string, mixed> $for_each
     * @return array<string, mixed>
     */
    public function reduce(array $state, array $for_each): array;
}
