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

    public function find(int $id): ?Batch
    {
        $table = $this->conn->table(Config::table_batches());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $id]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? Batch::from_row($row) : null;
    }
}
