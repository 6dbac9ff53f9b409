<?php

declare(strict_types=1);

namespace Queuety\Contracts;

/**
 * Decides a repeat_while/repeat_until step given as condition_class.
 */
interface RepeatCondition
{
    /**
     * @param array<string, mixed> $state
     */
    public function matches(array $state): bool;
}
