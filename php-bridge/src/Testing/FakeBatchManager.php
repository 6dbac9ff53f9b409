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

    /** Marks the in-memory batch cancelled; no callback runs under fake(). */
    public function cancel(int $batch_id): void
    {
        $b = $this->batches[$batch_id] ?? null;
        if ($b === null || $b->cancelled_at !== null) {
            return;
        }
        $now = new \DateTimeImmutable();
        $this->batches[$batch_id] = new Batch(
            id: $b->id, name: $b->name, total_jobs: $b->total_jobs, pending_jobs: $b->pending_jobs, failed_jobs: $b->failed_jobs,
            failed_job_ids: $b->failed_job_ids, options: $b->options, cancelled_at: $now, created_at: $b->created_at, finished_at: $now,
        );
    }

    /** In-memory batches are never older than the test: nothing to prune. */
    public function prune(int $days): int
    {
        return 0;
    }
}
