<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Queuety's workflow step, unchanged: it receives the workflow state and
 * returns what is merged into it.
 */
interface Step
{
    /**
     * @param array<string, mixed> $state
     * @return array<string, mixed>
     */
    public function handle(array $state): array;

    /**
     * @return array<string, mixed>
     */
    public function config(): array;
}
