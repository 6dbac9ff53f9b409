<?php

declare(strict_types=1);

namespace Queuety;

/**
 * What the plugin's ResourceManager reads to admit jobs: running jobs of
 * a concurrency group and the cost units running in a group or queue.
 * Admission itself is the worker's (`queuety work`).
 */
class ResourceManager
{
    public function __construct(private readonly Connection $conn)
    {
    }

    public function active_group_count(string $group, ?int $exclude_job_id = null): int
    {
        return $this->sum('COUNT(*)', 'concurrency_group', $group, $exclude_job_id);
    }

    public function active_group_cost_units(string $group, ?int $exclude_job_id = null): int
    {
        return $this->sum('COALESCE(SUM(cost_units), 0)', 'concurrency_group', $group, $exclude_job_id);
    }

    public function active_queue_cost_units(string $queue, ?int $exclude_job_id = null): int
    {
        return $this->sum('COALESCE(SUM(cost_units), 0)', 'queue', $queue, $exclude_job_id);
    }

    private function sum(string $what, string $column, string $value, ?int $exclude_job_id): int
    {
        $table = $this->conn->table(Config::table_jobs());
        $sql = "SELECT {$what} FROM {$table} WHERE {$column} = :value AND status = 'processing'";
        $params = ['value' => $value];
        if ($exclude_job_id !== null) {
            $sql .= ' AND id != :exclude';
            $params['exclude'] = $exclude_job_id;
        }
        $stmt = $this->conn->pdo()->prepare($sql);
        $stmt->execute($params);
        return (int) $stmt->fetchColumn();
    }
}
