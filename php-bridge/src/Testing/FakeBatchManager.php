<?php

declare(strict_types=1);

namespace Queuety\Testing;

use Queuety\Batch;
use Queuety\BatchManager;

/**
 * The batches Queuety::fake() creates, in memory: create_batch()
 * ->dispatch() gets a Batch with a made-up id, and find_batch() finds it.
 */
class FakeBatchManager extends BatchManager
{
    /** @var array<int, Batch> */
    private array $batches = [];
    private int $next_batch_id = 1;

    public function __construct()
    {
        // No connection: nothing here reaches the database.
    }

    /** @param array<string, mixed> $options */
    public function create(int $total_jobs, ?string $name = null, array $options = []): int
    {
        $id = $this->next_batch_id++;
        $this->batches[$id] = new Batch(
            id: $id, name: $name, total_jobs: $total_jobs, pending_jobs: $total_jobs, failed_jobs: 0, failed_job_ids: [],
            options: $options, cancelled_at: null, created_at: new \DateTimeImmutable(), finished_at: null,
        );
        return $id;
    }

    public function find(int $id): ?Batch
    {
        return $this->batches[$id] ?? null;
    }
}
