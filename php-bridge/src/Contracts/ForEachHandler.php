<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * Runs one item of a for_each step.
 */
interface ForEachHandler
{
    /**
     * @param array<string, mixed> $state
     * @return array<string, mixed>
     */
    public function handle_item(array $state, mixed $item, int $index): array;

    /**
     * Dispatch defaults, as for Step::config().
     *
     * @return array<string, mixed>
     */
    public function config(): array;
}
