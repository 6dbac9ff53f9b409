<?php

declare(strict_types=1);

namespace Queuety\Testing;

use Queuety\Enums\Priority;
use Queuety\Queue;

/**
 * The Queue the facade's builders write to while Queuety::fake() is on:
 * every dispatch is recorded in the QueueFake and gets a made-up id; no
 * database is touched.
 */
class FakeQueue extends Queue
{
    private int $next_job_id = 1;

    public function __construct(private readonly QueueFake $fake)
    {
        // No connection: nothing here reaches the database.
    }

    public function recorder(): QueueFake
    {
        return $this->fake;
    }

    /**
     * @param array<mixed>              $payload
     * @param array<string, mixed>|null $worker_session
     */
    public function dispatch(
        string $handler,
        array $payload = [],
        string $queue = 'default',
        Priority $priority = Priority::Low,
        int $delay = 0,
        int $max_attempts = 3,
        ?int $workflow_id = null,
        ?int $step_index = null,
        bool $unique = false,
        ?int $depends_on = null,
        ?int $batch_id = null,
        ?string $concurrency_group = null,
        ?int $concurrency_limit = null,
        int $cost_units = 1,
        ?string $session_id = null,
        ?array $worker_session = null,
    ): int {
        $this->fake->push($handler, $payload, $queue);
        return $this->next_job_id++;
    }

    /**
     * @param list<array<string, mixed>> $jobs
     * @return list<int>
     */
    public function batch(array $jobs): array
    {
        $ids = [];
        foreach ($jobs as $job) {
            $ids[] = $this->dispatch(
                handler: is_string($job['handler'] ?? null) ? $job['handler'] : '',
                payload: is_array($job['payload'] ?? null) ? $job['payload'] : [],
                queue: is_string($job['queue'] ?? null) ? $job['queue'] : 'default',
            );
        }
        return $ids;
    }
}
