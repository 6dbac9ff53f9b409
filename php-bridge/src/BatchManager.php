<?php

declare(strict_types=1);

namespace Queuety;

/**
 * Batch rows by id. Their counters and callbacks are kept by whoever
 * runs the batch's jobs: `queuety work` or the plugin's workers.
 */
class BatchManager
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Insert a batch row as the plugin does; its id.
     *
     * @param array<string, mixed> $options then, catch, finally, allow_failures
     */
    public function create(int $total_jobs, ?string $name = null, array $options = []): int
    {
        $table = $this->conn->table(Config::table_batches());
        $pdo = $this->conn->pdo();
        $pdo->prepare(
            "INSERT INTO {$table} (name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options)
            VALUES (:name, :total_jobs, :pending_jobs, 0, '[]', :options)"
        )->execute(['name' => $name, 'total_jobs' => $total_jobs, 'pending_jobs' => $total_jobs, 'options' => json_encode($options, JSON_THROW_ON_ERROR)]);
        return (int) $pdo->lastInsertId();
    }

    public function find(int $id): ?Batch
    {
        $table = $this->conn->table(Config::table_batches());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $id]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? Batch::from_row($row) : null;
    }
}
