<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * The chunks a streaming step has written (the chunks table), read as
 * the plugin's ChunkStore reads them.
 */
class ChunkStore
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /** @return list<string> The job's chunks in order. */
    public function get_chunks(int $job_id): array
    {
        $table = $this->conn->table(Config::table_chunks());
        $stmt = $this->conn->pdo()->prepare("SELECT content FROM {$table} WHERE job_id = :job_id ORDER BY chunk_index ASC");
        $stmt->execute(['job_id' => $job_id]);
        return array_map('strval', $stmt->fetchAll(PDO::FETCH_COLUMN));
    }

    public function append_chunk(int $job_id, int $chunk_index, string $content, ?int $workflow_id = null, ?int $step_index = null): void
    {
        $table = $this->conn->table(Config::table_chunks());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table} (job_id, workflow_id, step_index, chunk_index, content) VALUES (:job_id, :workflow_id, :step_index, :chunk_index, :content)"
        )->execute(['job_id' => $job_id, 'workflow_id' => $workflow_id, 'step_index' => $step_index, 'chunk_index' => $chunk_index, 'content' => $content]);
    }

    public function clear_chunks(int $job_id): void
    {
        $table = $this->conn->table(Config::table_chunks());
        $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE job_id = :job_id")->execute(['job_id' => $job_id]);
    }

    public function chunk_count(int $job_id): int
    {
        $table = $this->conn->table(Config::table_chunks());
        $stmt = $this->conn->pdo()->prepare("SELECT COUNT(*) FROM {$table} WHERE job_id = :job_id");
        $stmt->execute(['job_id' => $job_id]);
        return (int) $stmt->fetchColumn();
    }

    /** The job's chunks joined in order. */
    public function get_accumulated(int $job_id): string
    {
        return implode('', $this->get_chunks($job_id));
    }
}
