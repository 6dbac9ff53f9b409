<?php

declare(strict_types=1);

namespace Queuety\Bridge;

use Queuety\Enums\Priority;

/**
 * The job a handler is running, as the daemon describes it. Registered
 * callables that take a second parameter receive it; anything else can
 * ask JobContext::current().
 */
final class JobContext
{
    private static ?self $current = null;

    public function __construct(
        public readonly int $id,
        public readonly string $handler,
        public readonly string $queue,
        public readonly int $attempt,
        public readonly int $max_attempts,
        public readonly Priority $priority,
        public readonly ?int $workflow_id = null,
        public readonly ?int $step_index = null,
    ) {
    }

    /**
     * @param array<mixed> $job The request's "job" object.
     */
    public static function from_array(array $job): self
    {
        return new self(
            (int) ($job['id'] ?? 0),
            (string) ($job['handler'] ?? ''),
            (string) ($job['queue'] ?? 'default'),
            (int) ($job['attempt'] ?? 1),
            (int) ($job['max_attempts'] ?? 3),
            Priority::tryFrom((int) ($job['priority'] ?? 0)) ?? Priority::Low,
            isset($job['workflow_id']) ? (int) $job['workflow_id'] : null,
            isset($job['step_index']) ? (int) $job['step_index'] : null,
        );
    }

    public static function current(): ?self
    {
        return self::$current;
    }

    /**
     * Set by the worker around each job.
     */
    public static function set(?self $job): void
    {
        self::$current = $job;
    }
}
