<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * The workflow_events table as the plugin reads it (the daemon and the
 * plugin's workers write it): a workflow's timeline, its whole trace
 * (row, events by step, jobs, logs, artifacts, chunks, signals, wait
 * dependencies) and the public state after a step.
 */
class WorkflowEventLog
{
    /** Columns holding JSON, decoded on read. */
    private const JSON_COLUMNS = ['input', 'output', 'state_before', 'state_after', 'context', 'artifacts', 'chunks', 'error'];

    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Write one event row (JSON columns as PHP values), as the plugin's
     * record_event does.
     *
     * @param array<string, mixed> $event
     */
    public function record_event(array $event): void
    {
        $row = array_merge([
            'workflow_id' => null, 'job_id' => null, 'parent_event_id' => null, 'step_index' => null, 'step_name' => null,
            'step_type' => null, 'handler' => '', 'event' => '', 'queue' => null, 'attempt' => null, 'input' => null,
            'output' => null, 'state_before' => null, 'state_after' => null, 'context' => null, 'artifacts' => null,
            'chunks' => null, 'error' => null, 'duration_ms' => null,
        ], $event);
        foreach (self::JSON_COLUMNS as $column) {
            $row[$column] = $row[$column] === null ? null : json_encode($row[$column], JSON_THROW_ON_ERROR);
        }
        $table = $this->conn->table(Config::table_workflow_events());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table}
                (workflow_id, job_id, parent_event_id, step_index, step_name, step_type, handler, event, queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms)
            VALUES
                (:workflow_id, :job_id, :parent_event_id, :step_index, :step_name, :step_type, :handler, :event, :queue, :attempt, :input, :output, :state_before, :state_after, :context, :artifacts, :chunks, :error, :duration_ms)"
        )->execute($row);
    }

    /**
     * The workflow's events oldest first, JSON decoded, with error_message;
     * $limit null for all.
     *
     * @return list<array<string, mixed>>
     */
    public function get_timeline(int $workflow_id, ?int $limit = 100, int $offset = 0): array
    {
        $table = $this->conn->table(Config::table_workflow_events());
        $sql = "SELECT id, workflow_id, job_id, parent_event_id, step_index, step_name, step_type, handler, event, queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at
            FROM {$table} WHERE workflow_id = :workflow_id ORDER BY id ASC";
        if ($limit !== null) {
            $sql .= sprintf(' LIMIT %d OFFSET %d', max(1, $limit), max(0, $offset));
        }
        $stmt = $this->conn->pdo()->prepare($sql);
        $stmt->execute(['workflow_id' => $workflow_id]);
        $rows = [];
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            foreach (self::JSON_COLUMNS as $column) {
                $row[$column] = $row[$column] === null ? null : json_decode((string) $row[$column], true);
            }
            $row['error_message'] = is_array($row['error']) ? ($row['error']['message'] ?? null) : null;
            $rows[] = $row;
        }
        return $rows;
    }

    /**
     * @return array<string, mixed>
     * @throws \RuntimeException For a missing workflow.
     */
    public function get_trace(int $workflow_id): array
    {
        $table = $this->conn->table(Config::table_workflows());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $workflow_id]);
        $workflow = $stmt->fetch(PDO::FETCH_ASSOC);
        if (!is_array($workflow)) {
            throw new \RuntimeException("Workflow {$workflow_id} not found.");
        }
        $workflow['id'] = (int) $workflow['id'];
        $workflow['current_step'] = (int) $workflow['current_step'];
        $workflow['total_steps'] = (int) $workflow['total_steps'];
        $workflow['state'] = is_string($workflow['state']) ? (json_decode($workflow['state'], true) ?: []) : [];

        $events = $this->get_timeline($workflow_id, null);
        $steps = [];
        foreach ($events as $event) {
            $i = is_scalar($event['step_index']) ? (int) $event['step_index'] : -1;
            $steps[$i] ??= ['step_index' => $i, 'step_name' => $event['step_name'], 'step_type' => $event['step_type'], 'handler' => $event['handler'], 'events' => []];
            $steps[$i]['events'][] = $event;
            if (in_array($event['event'], ['step_completed', 'step_failed', 'workflow_waiting', 'workflow_resumed'], true)) {
                $steps[$i]['latest'] = $event;
            }
        }
        ksort($steps);
        return [
            'workflow' => $workflow,
            'steps' => array_values($steps),
            'events' => $events,
            'jobs' => $this->rows(Config::table_jobs(), 'workflow_id', $workflow_id, 'id ASC', ['payload' => [], 'heartbeat_data' => null]),
            'logs' => $this->rows(Config::table_logs(), 'workflow_id', $workflow_id, 'id ASC', ['context' => null]),
            'artifacts' => $this->rows(Config::table_artifacts(), 'workflow_id', $workflow_id, 'id ASC', ['metadata' => null]),
            'chunks' => $this->rows(Config::table_chunks(), 'workflow_id', $workflow_id, 'step_index ASC, chunk_index ASC, id ASC', []),
            'signals' => $this->rows(Config::table_signals(), 'workflow_id', $workflow_id, 'id ASC', ['payload' => []]),
            'wait_dependencies' => $this->rows(Config::table_workflow_dependencies(), 'waiting_workflow_id', $workflow_id, 'id ASC', []),
        ];
    }

    /**
     * The public state recorded when the step completed (or its wait
     * resumed), or null when none was recorded.
     *
     * @return array<string, mixed>|null
     */
    public function get_state_at_step(int $workflow_id, int $step_index): ?array
    {
        $table = $this->conn->table(Config::table_workflow_events());
        $stmt = $this->conn->pdo()->prepare(
            "SELECT state_after FROM {$table}
            WHERE workflow_id = :workflow_id AND step_index = :step_index AND event IN ('step_completed', 'workflow_resumed')
            ORDER BY id DESC LIMIT 1"
        );
        $stmt->execute(['workflow_id' => $workflow_id, 'step_index' => $step_index]);
        $json = $stmt->fetchColumn();
        $decoded = is_string($json) ? json_decode($json, true) : null;
        if (!is_array($decoded)) {
            return null;
        }
        return array_filter($decoded, 'is_string', ARRAY_FILTER_USE_KEY);
    }

    /** Delete events older than the given days; the number deleted. */
    public function prune(int $older_than_days): int
    {
        $table = $this->conn->table(Config::table_workflow_events());
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE created_at < :cutoff");
        $stmt->execute(['cutoff' => gmdate('Y-m-d H:i:s', time() - $older_than_days * 86400)]);
        return $stmt->rowCount();
    }

    /**
     * @param array<string, mixed> $json JSON column => value when NULL or not an array
     * @return list<array<string, mixed>>
     */
    private function rows(string $table, string $column, int $id, string $order, array $json): array
    {
        $table = $this->conn->table($table);
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE {$column} = :id ORDER BY {$order}");
        $stmt->execute(['id' => $id]);
        $rows = [];
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            foreach ($json as $col => $fallback) {
                $decoded = is_string($row[$col] ?? null) ? json_decode($row[$col], true) : null;
                $row[$col] = is_array($decoded) ? $decoded : $fallback;
            }
            $rows[] = $row;
        }
        return $rows;
    }
}
