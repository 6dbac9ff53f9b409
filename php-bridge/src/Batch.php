<?php

declare(strict_types=1);

namespace Queuety;

/**
 * A batches row, as the plugin's Batch reads it.
 */
final class Batch
{
    /**
     * @param list<int>            $failed_job_ids
     * @param array<string, mixed> $options
     */
    public function __construct(
        public readonly int $id,
        public readonly ?string $name,
        public readonly int $total_jobs,
        public readonly int $pending_jobs,
        public readonly int $failed_jobs,
        public readonly array $failed_job_ids,
        public readonly array $options,
        public readonly ?\DateTimeImmutable $cancelled_at,
        public readonly \DateTimeImmutable $created_at,
        public readonly ?\DateTimeImmutable $finished_at,
    ) {
    }

    public function progress(): int
    {
        return $this->total_jobs === 0 ? 100 : (int) floor(($this->total_jobs - $this->pending_jobs) / $this->total_jobs * 100);
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
     * @param array<string, mixed> $row
     */
    public static function from_row(array $row): self
    {
        $time = static fn (mixed $v): ?\DateTimeImmutable => is_string($v) && $v !== '' ? new \DateTimeImmutable($v, new \DateTimeZone('UTC')) : null;
        $json = static fn (mixed $v): array => is_string($v) && is_array($d = json_decode($v, true)) ? $d : [];
        return new self(
            (int) ($row['id'] ?? 0),
            is_string($row['name'] ?? null) ? $row['name'] : null,
            (int) ($row['total_jobs'] ?? 0),
            (int) ($row['pending_jobs'] ?? 0),
            (int) ($row['failed_jobs'] ?? 0),
            array_values(array_map('intval', $json($row['failed_job_ids'] ?? null))),
            $json($row['options'] ?? null),
            $time($row['cancelled_at'] ?? null),
            $time($row['created_at'] ?? null) ?? throw new \InvalidArgumentException('Batch row is missing a valid created_at timestamp.'),
            $time($row['finished_at'] ?? null),
        );
    }
}
