<?php

declare(strict_types=1);

namespace Queuety;

/**
 * A batch row as its then/catch/finally callbacks receive it. Same
 * constructor and from_row() as the plugin's, so a callback written for
 * the plugin runs unchanged in the daemon's pool.
 */
readonly class Batch
{
    /**
     * @param array<int, int>      $failed_job_ids
     * @param array<string, mixed> $options
     */
    public function __construct(
        public int $id,
        public ?string $name,
        public int $total_jobs,
        public int $pending_jobs,
        public int $failed_jobs,
        public array $failed_job_ids,
        public array $options,
        public ?\DateTimeImmutable $cancelled_at,
        public \DateTimeImmutable $created_at,
        public ?\DateTimeImmutable $finished_at,
    ) {
    }

    /** Percentage of jobs no longer pending, rounded down. */
    public function progress(): int
    {
        if ($this->total_jobs === 0) {
            return 100;
        }
        return (int) floor((($this->total_jobs - $this->pending_jobs) / $this->total_jobs) * 100);
    }

    public function finished(): bool
    {
        return $this->finished_at !== null;
    }

    public function cancelled(): bool
    {
        return $this->cancelled_at !== null;
    }

    public function has_failures(): bool
    {
        return $this->failed_jobs > 0;
    }

    /**
     * @param array<string, mixed> $row A batches row with its columns as strings.
     */
    public static function from_row(array $row): self
    {
        $ids = is_string($row['failed_job_ids'] ?? null) ? json_decode($row['failed_job_ids'], true) : [];
        $options = is_string($row['options'] ?? null) ? json_decode($row['options'], true) : [];
        $time = static fn (mixed $v): ?\DateTimeImmutable => is_string($v) && $v !== '' ? new \DateTimeImmutable($v) : null;
        if (!is_string($row['created_at'] ?? null)) {
            throw new \InvalidArgumentException('Batch row is missing a valid created_at timestamp.');
        }
        return new self(
            id: (int) ($row['id'] ?? 0),
            name: is_string($row['name'] ?? null) ? $row['name'] : null,
            total_jobs: (int) ($row['total_jobs'] ?? 0),
            pending_jobs: (int) ($row['pending_jobs'] ?? 0),
            failed_jobs: (int) ($row['failed_jobs'] ?? 0),
            failed_job_ids: is_array($ids) ? array_values(array_map(static fn (mixed $v): int => is_numeric($v) ? (int) $v : 0, $ids)) : [],
            options: is_array($options) ? $options : [],
            cancelled_at: $time($row['cancelled_at'] ?? null),
            created_at: new \DateTimeImmutable($row['created_at']),
            finished_at: $time($row['finished_at'] ?? null),
        );
    }
}
