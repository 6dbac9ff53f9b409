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

    /**
     * Cancel a batch as the plugin does: cancelled_at and finished_at set
     * once, and its finally callback run here when this call cancelled it
     * (a callback's failure is swallowed, as the plugin's).
     */
    public function cancel(int $batch_id): void
    {
        $table = $this->conn->table(Config::table_batches());
        $stmt = $this->conn->pdo()->prepare(
            "UPDATE {$table} SET cancelled_at = NOW(), finished_at = NOW() WHERE id = :id AND cancelled_at IS NULL"
        );
        $stmt->execute(['id' => $batch_id]);
        if ($stmt->rowCount() === 0) {
            return;
        }
        $batch = $this->find($batch_id);
        $class = $batch?->options['finally'] ?? null;
        if ($batch === null || !is_string($class) || !class_exists($class)) {
            return;
        }
        try {
            $handler = new $class();
            if (method_exists($handler, 'handle')) {
                $handler->handle($batch);
            }
        } catch (\Throwable) {
            // The plugin's callbacks are non-fatal.
        }
    }

    /**
     * Delete finished batches older than $days days (by this process's
     * clock, as the plugin's gmdate(time())); how many.
     */
    public function prune(int $days): int
    {
        $table = $this->conn->table(Config::table_batches());
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE finished_at IS NOT NULL AND finished_at < :cutoff");
        $stmt->execute(['cutoff' => gmdate('Y-m-d H:i:s', time() - $days * 86400)]);
        return $stmt->rowCount();
    }
}
