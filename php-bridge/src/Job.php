<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\JobStatus;
use Queuety\Enums\Priority;

/**
 * A jobs row, as a chain's catch handler receives the buried job. Same
 * constructor and from_row() as the plugin's record class.
 */
readonly class Job
{
    /**
     * @param array<string, mixed>      $payload
     * @param array<string, mixed>|null $heartbeat_data
     */
    public function __construct(
        public int $id,
        public string $queue,
        public string $handler,
        public array $payload,
        public Priority $priority,
        public JobStatus $status,
        public int $attempts,
        public int $max_attempts,
        public \DateTimeImmutable $available_at,
        public ?\DateTimeImmutable $reserved_at,
        public ?\DateTimeImmutable $completed_at,
        public ?\DateTimeImmutable $failed_at,
        public ?string $error_message,
        public ?int $workflow_id,
        public ?int $step_index,
        public \DateTimeImmutable $created_at,
        public ?string $payload_hash = null,
        public ?int $depends_on = null,
        public ?int $batch_id = null,
        public ?array $heartbeat_data = null,
        public ?string $concurrency_group = null,
        public ?int $concurrency_limit = null,
        public int $cost_units = 1,
    ) {
    }

    public function is_workflow_step(): bool
    {
        return $this->workflow_id !== null;
    }

    /**
     * @param array<string, mixed> $row A jobs row with its columns as strings.
     */
    public static function from_row(array $row): self
    {
        $payload = is_string($row['payload'] ?? null) ? json_decode($row['payload'], true) : [];
        $heartbeat = is_string($row['heartbeat_data'] ?? null) ? json_decode($row['heartbeat_data'], true) : null;
        $time = static fn (mixed $v): ?\DateTimeImmutable => is_string($v) && $v !== '' ? new \DateTimeImmutable($v) : null;
        $int = static fn (mixed $v): ?int => is_numeric($v) ? (int) $v : null;
        $str = static fn (mixed $v): ?string => is_string($v) ? $v : null;
        return new self(
            id: (int) ($row['id'] ?? 0),
            queue: (string) ($row['queue'] ?? ''),
            handler: (string) ($row['handler'] ?? ''),
            payload: is_array($payload) ? $payload : [],
            priority: Priority::from((int) ($row['priority'] ?? 0)),
            status: JobStatus::from((string) ($row['status'] ?? '')),
            attempts: (int) ($row['attempts'] ?? 0),
            max_attempts: (int) ($row['max_attempts'] ?? 0),
            available_at: new \DateTimeImmutable((string) ($row['available_at'] ?? 'now')),
            reserved_at: $time($row['reserved_at'] ?? null),
            completed_at: $time($row['completed_at'] ?? null),
            failed_at: $time($row['failed_at'] ?? null),
            error_message: $str($row['error_message'] ?? null),
            workflow_id: $int($row['workflow_id'] ?? null),
            step_index: $int($row['step_index'] ?? null),
            created_at: new \DateTimeImmutable((string) ($row['created_at'] ?? 'now')),
            payload_hash: $str($row['payload_hash'] ?? null),
            depends_on: $int($row['depends_on'] ?? null),
            batch_id: $int($row['batch_id'] ?? null),
            heartbeat_data: is_array($heartbeat) ? $heartbeat : null,
            concurrency_group: $str($row['concurrency_group'] ?? null),
            concurrency_limit: $int($row['concurrency_limit'] ?? null),
            cost_units: array_key_exists('cost_units', $row) ? max(0, (int) $row['cost_units']) : 1,
        );
    }
}
