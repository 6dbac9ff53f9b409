<?php

declare(strict_types=1);

namespace Queuety;

use PDO;
use Queuety\Enums\LogEvent;

/**
 * The logs table as the plugin's Logger reads and writes it: one row per
 * event (handler '' and queue 'default' unless given, an array context
 * JSON-encoded), queries by job, workflow, handler, event and time, and
 * the age-based purge `wp queuety log purge` runs.
 */
class Logger
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * @param array<string, mixed> $data job_id, workflow_id, step_index, handler, queue, attempt, duration_ms, memory_peak_kb, error_message, error_class, error_trace, context
     */
    public function log(LogEvent $event, array $data = []): int
    {
        $context = $data['context'] ?? null;
        if (is_array($context)) {
            $context = json_encode($context, JSON_THROW_ON_ERROR);
        }
        $table = $this->conn->table(Config::table_logs());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table}
                (job_id, workflow_id, step_index, handler, queue, event, attempt,
                 duration_ms, memory_peak_kb, error_message, error_class, error_trace, context)
            VALUES
                (:job_id, :workflow_id, :step_index, :handler, :queue, :event, :attempt,
                 :duration_ms, :memory_peak_kb, :error_message, :error_class, :error_trace, :context)"
        )->execute([
            'job_id' => $data['job_id'] ?? null,
            'workflow_id' => $data['workflow_id'] ?? null,
            'step_index' => $data['step_index'] ?? null,
            'handler' => $data['handler'] ?? '',
            'queue' => $data['queue'] ?? 'default',
            'event' => $event->value,
            'attempt' => $data['attempt'] ?? null,
            'duration_ms' => $data['duration_ms'] ?? null,
            'memory_peak_kb' => $data['memory_peak_kb'] ?? null,
            'error_message' => $data['error_message'] ?? null,
            'error_class' => $data['error_class'] ?? null,
            'error_trace' => $data['error_trace'] ?? null,
            'context' => $context,
        ]);
        return (int) $this->conn->pdo()->lastInsertId();
    }

    /** @return list<array<string, mixed>> */
    public function for_job(int $job_id): array
    {
        return $this->select('job_id = :v', ['v' => $job_id], 'ASC');
    }

    /** @return list<array<string, mixed>> */
    public function for_workflow(int $workflow_id): array
    {
        return $this->select('workflow_id = :v', ['v' => $workflow_id], 'ASC');
    }

    /** @return list<array<string, mixed>> */
    public function for_handler(string $handler, ?int $limit = null): array
    {
        return $this->select('handler = :v', ['v' => $handler], 'DESC', $limit);
    }

    /** @return list<array<string, mixed>> */
    public function for_event(LogEvent $event, ?int $limit = null): array
    {
        return $this->select('event = :v', ['v' => $event->value], 'DESC', $limit);
    }

    /** @return list<array<string, mixed>> */
    public function since(\DateTimeImmutable $since, ?int $limit = null): array
    {
        return $this->select('created_at >= :v', ['v' => $since->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d H:i:s')], 'ASC', $limit);
    }

    /** Delete log rows older than the given days; the number deleted. */
    public function purge(int $older_than_days): int
    {
        $table = $this->conn->table(Config::table_logs());
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE created_at < :cutoff");
        $stmt->execute(['cutoff' => gmdate('Y-m-d H:i:s', time() - $older_than_days * 86400)]);
        return $stmt->rowCount();
    }

    /**
     * @param array<string, mixed> $params
     * @return list<array<string, mixed>>
     */
    private function select(string $where, array $params, string $order, ?int $limit = null): array
    {
        $table = $this->conn->table(Config::table_logs());
        $sql = "SELECT * FROM {$table} WHERE {$where} ORDER BY id {$order}";
        if ($limit !== null) {
            $sql .= ' LIMIT ' . max(0, $limit);
        }
        $stmt = $this->conn->pdo()->prepare($sql);
        $stmt->execute($params);
        return array_values($stmt->fetchAll(PDO::FETCH_ASSOC));
    }
}
