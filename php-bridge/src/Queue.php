<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\JobStatus;
use Queuety\Enums\Priority;

/**
 * The job-side SQL of Queuety's Queue class that a dispatching application
 * needs: one INSERT per job with the plugin's columns and normalisation,
 * queue pause and resume, and counts by status.
 */
class Queue
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Insert a job as Queue::dispatch does and return its id, or, for a
     * unique job with a pending or processing twin, the twin's id.
     * $session_id and $worker_session (the normalized options) bind the
     * job to a worker session; those columns are queuety-go's extension,
     * written only for bound jobs so plugin-only tables keep working.
     *
     * @param array<mixed>              $payload
     * @param array<string, mixed>|null $worker_session
     */
    public function dispatch(
        string $handler,
        array $payload = [],
        string $queue = 'default',
        Priority $priority = Priority::Low,
        int $delay = 0,
        int $max_attempts = 3,
        ?int $workflow_id = null,
        ?int $step_index = null,
        bool $unique = false,
        ?int $depends_on = null,
        ?int $batch_id = null,
        ?string $concurrency_group = null,
        ?int $concurrency_limit = null,
        int $cost_units = 1,
        ?string $session_id = null,
        ?array $worker_session = null,
    ): int {
        $table = $this->conn->table(Config::table_jobs());
        // The app clock in UTC, not NOW(): that is what the plugin stores.
        $available_at = gmdate('Y-m-d H:i:s', time() + $delay);
        // json_encode never returns '' here, so the plugin's `?: '{}'`
        // never fires and an empty payload is stored as "[]".
        $payload_json = json_encode($payload, JSON_THROW_ON_ERROR);
        $payload_hash = $unique ? hash('sha256', $payload_json) : null;
        $cost_units = max(0, $cost_units);

        $concurrency_group = $concurrency_group !== null ? trim($concurrency_group) : null;
        if ($concurrency_group === '' || $concurrency_group === null || $concurrency_limit === null || $concurrency_limit < 1) {
            $concurrency_group = null;
            $concurrency_limit = null;
        }

        if ($unique) {
            $existing = $this->find_unique($table, $handler, $payload_hash);
            if ($existing !== null) {
                return $existing;
            }
        }

        if (($session_id === null) !== ($worker_session === null)) {
            throw new \InvalidArgumentException('A session-bound job needs both its session id and its worker_session options.');
        }
        $session_columns = $session_id === null ? '' : ', session_id, worker_session';
        $session_values = $session_id === null ? '' : ', :session_id, :worker_session';
        $stmt = $this->conn->pdo()->prepare(
            "INSERT INTO {$table}
                (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units{$session_columns})
            VALUES
                (:queue, :handler, :payload, :payload_hash, :priority, :status, :max_attempts, :available_at, :workflow_id, :step_index, :depends_on, :batch_id, :concurrency_group, :concurrency_limit, :cost_units{$session_values})"
        );
        $session_params = $session_id === null ? [] : [
            'session_id' => $session_id,
            'worker_session' => json_encode($worker_session, JSON_THROW_ON_ERROR),
        ];
        $stmt->execute($session_params + [
            'queue' => $queue,
            'handler' => $handler,
            'payload' => $payload_json,
            'payload_hash' => $payload_hash,
            'priority' => $priority->value,
            'status' => JobStatus::Pending->value,
            'max_attempts' => $max_attempts,
            'available_at' => $available_at,
            'workflow_id' => $workflow_id,
            'step_index' => $step_index,
            'depends_on' => $depends_on,
            'batch_id' => $batch_id,
            'concurrency_group' => $concurrency_group,
            'concurrency_limit' => $concurrency_limit,
            'cost_units' => $cost_units,
        ]);
        return (int) $this->conn->pdo()->lastInsertId();
    }

    /**
     * Not atomic, as in the plugin: there is no unique index.
     */
    private function find_unique(string $table, string $handler, string $payload_hash): ?int
    {
        $check = $this->conn->pdo()->prepare(
            "SELECT id FROM {$table}
            WHERE handler = :handler AND payload_hash = :payload_hash AND status IN (:pending, :processing)
            LIMIT 1"
        );
        $check->execute([
            'handler' => $handler,
            'payload_hash' => $payload_hash,
            'pending' => JobStatus::Pending->value,
            'processing' => JobStatus::Processing->value,
        ]);
        $row = $check->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) && isset($row['id']) && is_scalar($row['id']) ? (int) $row['id'] : null;
    }

    /**
     * Workers (the plugin's and the daemon's) skip a paused queue.
     */
    public function pause_queue(string $queue): void
    {
        $table = $this->conn->table(Config::table_queue_states());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table} (queue, paused, paused_at) VALUES (:queue, 1, NOW())
            ON DUPLICATE KEY UPDATE paused = 1, paused_at = NOW()"
        )->execute(['queue' => $queue]);
    }

    public function resume_queue(string $queue): void
    {
        $table = $this->conn->table(Config::table_queue_states());
        $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE queue = :queue")->execute(['queue' => $queue]);
    }

    /**
     * Read from the table each time: the bridge keeps no cache.
     */
    public function is_queue_paused(string $queue): bool
    {
        $table = $this->conn->table(Config::table_queue_states());
        $stmt = $this->conn->pdo()->prepare("SELECT paused FROM {$table} WHERE queue = :queue");
        $stmt->execute(['queue' => $queue]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) && !empty($row['paused']);
    }

    /**
     * @return string[]
     */
    public function paused_queues(): array
    {
        $table = $this->conn->table(Config::table_queue_states());
        $rows = $this->conn->pdo()->query("SELECT queue FROM {$table} WHERE paused = 1")->fetchAll(\PDO::FETCH_COLUMN);
        return array_values(array_filter($rows, 'is_string'));
    }

    /**
     * @return array{pending: int, processing: int, completed: int, failed: int, buried: int}
     */
    public function stats(?string $queue = null): array
    {
        $table = $this->conn->table(Config::table_jobs());
        $sql = "SELECT status, COUNT(*) AS cnt FROM {$table}";
        $params = [];
        if ($queue !== null) {
            $sql .= ' WHERE queue = :queue';
            $params['queue'] = $queue;
        }
        $stmt = $this->conn->pdo()->prepare($sql . ' GROUP BY status');
        $stmt->execute($params);
        $counts = [];
        foreach ($stmt->fetchAll(\PDO::FETCH_ASSOC) as $row) {
            $counts[(string) $row['status']] = (int) $row['cnt'];
        }
        $stats = [];
        foreach (JobStatus::cases() as $status) {
            $stats[$status->value] = $counts[$status->value] ?? 0;
        }
        return $stats;
    }

    public function find(int $job_id): ?Job
    {
        $table = $this->conn->table(Config::table_jobs());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $job_id]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? Job::from_row($row) : null;
    }

    /**
     * Bury a job as the plugin does (failed_at from the database clock,
     * as its NOW() writes it).
     */
    public function bury(int $job_id, string $error_message): void
    {
        $table = $this->conn->table(Config::table_jobs());
        $this->conn->pdo()->prepare("UPDATE {$table} SET status = :status, failed_at = NOW(), error_message = :error WHERE id = :id")
            ->execute(['status' => JobStatus::Buried->value, 'error' => $error_message, 'id' => $job_id]);
    }

    /**
     * Make a job pending again after $delay_sec (its attempts are kept,
     * as in the plugin).
     */
    public function retry(int $job_id, int $delay_sec = 0): void
    {
        $table = $this->conn->table(Config::table_jobs());
        $this->conn->pdo()->prepare(
            "UPDATE {$table} SET status = :status, reserved_at = NULL, available_at = :available_at, error_message = NULL WHERE id = :id"
        )->execute(['status' => JobStatus::Pending->value, 'available_at' => gmdate('Y-m-d H:i:s', time() + $delay_sec), 'id' => $job_id]);
    }

    /**
     * Buried jobs oldest first, optionally of one queue.
     *
     * @return list<Job>
     */
    public function buried(?string $queue = null): array
    {
        $table = $this->conn->table(Config::table_jobs());
        $sql = "SELECT * FROM {$table} WHERE status = :status";
        $params = ['status' => JobStatus::Buried->value];
        if ($queue !== null) {
            $sql .= ' AND queue = :queue';
            $params['queue'] = $queue;
        }
        $stmt = $this->conn->pdo()->prepare($sql . ' ORDER BY id ASC');
        $stmt->execute($params);
        return array_map(static fn (array $row): Job => Job::from_row($row), array_values($stmt->fetchAll(\PDO::FETCH_ASSOC)));
    }

    /** Delete jobs completed more than the given days ago; the number deleted. */
    public function purge_completed(int $older_than_days): int
    {
        $table = $this->conn->table(Config::table_jobs());
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE status = :status AND completed_at < :cutoff");
        $stmt->execute(['status' => JobStatus::Completed->value, 'cutoff' => gmdate('Y-m-d H:i:s', time() - $older_than_days * 86400)]);
        return $stmt->rowCount();
    }

    /**
     * Insert many plain jobs in one statement, as the plugin's batch()
     * does (handler, payload, queue, priority, delay, max_attempts each;
     * no other options), and return their ids.
     *
     * @param list<array<string, mixed>> $jobs
     * @return list<int>
     */
    public function batch(array $jobs): array
    {
        if ($jobs === []) {
            return [];
        }
        $rows = [];
        $params = [];
        $now = time();
        foreach (array_values($jobs) as $i => $job) {
            $priority = $job['priority'] ?? Priority::Low;
            if ($priority instanceof Priority) {
                $priority = $priority->value;
            }
            $delay = is_scalar($job['delay'] ?? 0) ? (int) ($job['delay'] ?? 0) : 0;
            $rows[] = "(:queue_{$i}, :handler_{$i}, :payload_{$i}, :priority_{$i}, :status_{$i}, :max_attempts_{$i}, :available_at_{$i})";
            $params += [
                "queue_{$i}" => is_string($job['queue'] ?? null) ? $job['queue'] : 'default',
                "handler_{$i}" => is_string($job['handler'] ?? null) ? $job['handler'] : '',
                "payload_{$i}" => json_encode(is_array($job['payload'] ?? null) ? $job['payload'] : [], JSON_THROW_ON_ERROR),
                "priority_{$i}" => is_scalar($priority) ? (int) $priority : 0,
                "status_{$i}" => JobStatus::Pending->value,
                "max_attempts_{$i}" => is_scalar($job['max_attempts'] ?? null) ? (int) $job['max_attempts'] : 3,
                "available_at_{$i}" => gmdate('Y-m-d H:i:s', $now + $delay),
            ];
        }
        $table = $this->conn->table(Config::table_jobs());
        $pdo = $this->conn->pdo();
        $pdo->prepare("INSERT INTO {$table} (queue, handler, payload, priority, status, max_attempts, available_at) VALUES " . implode(', ', $rows))
            ->execute($params);
        // One multi-row INSERT takes consecutive ids from the first.
        $first = (int) $pdo->lastInsertId();
        return range($first, $first + count($rows) - 1);
    }
}
