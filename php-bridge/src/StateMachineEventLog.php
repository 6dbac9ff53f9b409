<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * The state_machine_events table as the plugin writes and reads it: one
 * row per lifecycle step of a machine (JSON columns json_encode'd, NULL
 * when not given), the timeline, a machine's whole trace, and the public
 * state as of an event.
 */
class StateMachineEventLog
{
    /** Columns holding JSON, encoded on write and decoded on read. */
    private const JSON_COLUMNS = ['input', 'output', 'state_before', 'state_after', 'context', 'artifacts', 'chunks', 'error'];

    /** Events that are a state's latest word in a trace. */
    private const LATEST = ['action_completed', 'action_failed', 'guard_completed', 'guard_failed', 'transitioned', 'event_rejected',
        'machine_waiting', 'machine_completed', 'machine_failed', 'machine_cancelled'];

    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * @param array<string, mixed>|null $state_snapshot
     * @param array<string, mixed>|null $payload
     */
    public function record(int $machine_id, string $state_name, string $event, ?string $event_name = null, ?array $state_snapshot = null, ?array $payload = null, ?string $error_message = null): void
    {
        $this->record_event([
            'machine_id' => $machine_id, 'state_name' => $state_name, 'event' => $event, 'event_name' => $event_name,
            'output' => $payload, 'state_after' => $state_snapshot,
            'error' => $error_message === null ? null : ['message' => $error_message],
        ]);
    }

    /**
     * @param array<string, mixed> $event Column => value; JSON columns as PHP values.
     */
    public function record_event(array $event): void
    {
        $row = array_merge([
            'machine_id' => null, 'job_id' => null, 'state_name' => '', 'handler' => null, 'event' => '', 'event_name' => null,
            'transition_name' => null, 'queue' => null, 'attempt' => null, 'input' => null, 'output' => null,
            'state_before' => null, 'state_after' => null, 'context' => null, 'artifacts' => null, 'chunks' => null,
            'error' => null, 'duration_ms' => null,
        ], $event);
        foreach (self::JSON_COLUMNS as $column) {
            $row[$column] = $row[$column] === null ? null : json_encode($row[$column], JSON_THROW_ON_ERROR);
        }
        $table = $this->conn->table(Config::table_state_machine_events());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table}
                (machine_id, job_id, state_name, handler, event, event_name, transition_name, queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms)
            VALUES
                (:machine_id, :job_id, :state_name, :handler, :event, :event_name, :transition_name, :queue, :attempt, :input, :output, :state_before, :state_after, :context, :artifacts, :chunks, :error, :duration_ms)"
        )->execute($row);
    }

    /**
     * The machine's events oldest first, JSON columns decoded and
     * error_message added; $limit null for all.
     *
     * @return list<array<string, mixed>>
     */
    public function get_timeline(int $machine_id, ?int $limit = 100, int $offset = 0): array
    {
        $table = $this->conn->table(Config::table_state_machine_events());
        $sql = "SELECT id, machine_id, job_id, state_name, handler, event, event_name, transition_name, queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at
            FROM {$table} WHERE machine_id = :machine_id ORDER BY id ASC";
        if ($limit !== null) {
            $sql .= sprintf(' LIMIT %d OFFSET %d', max(1, $limit), max(0, $offset));
        }
        $stmt = $this->conn->pdo()->prepare($sql);
        $stmt->execute(['machine_id' => $machine_id]);
        $rows = [];
        foreach ($stmt->fetchAll(PDO::FETCH_ASSOC) as $row) {
            foreach (self::JSON_COLUMNS as $column) {
                $row[$column] = is_string($row[$column]) ? json_decode($row[$column], true) : null;
            }
            $row['error_message'] = is_array($row['error']) ? ($row['error']['message'] ?? null) : null;
            $rows[] = $row;
        }
        return $rows;
    }

    /**
     * The machine row (state and definition decoded), its events grouped
     * by state, the action jobs and their logs, artifacts and chunks.
     *
     * @return array<string, mixed>
     * @throws \RuntimeException For a missing machine.
     */
    public function get_trace(int $machine_id): array
    {
        $table = $this->conn->table(Config::table_state_machines());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE id = :id");
        $stmt->execute(['id' => $machine_id]);
        $machine = $stmt->fetch(PDO::FETCH_ASSOC);
        if (!is_array($machine)) {
            throw new \RuntimeException("State machine {$machine_id} not found.");
        }
        $machine['id'] = (int) $machine['id'];
        foreach (['state', 'definition'] as $column) {
            $decoded = is_string($machine[$column]) && $machine[$column] !== '' ? json_decode($machine[$column], true) : null;
            $machine[$column] = is_array($decoded) ? $decoded : [];
        }
        $events = $this->get_timeline($machine_id, null);
        $states = [];
        $job_ids = [];
        foreach ($events as $event) {
            $name = (string) $event['state_name'];
            $states[$name] ??= ['state_name' => $name, 'events' => []];
            $states[$name]['events'][] = $event;
            if (in_array($event['event'], self::LATEST, true)) {
                $states[$name]['latest'] = $event;
            }
            if (is_scalar($event['job_id']) && (int) $event['job_id'] > 0) {
                $job_ids[(int) $event['job_id']] = true;
            }
        }
        $job_ids = array_keys($job_ids);
        return [
            'machine' => $machine,
            'states' => array_values($states),
            'events' => $events,
            'jobs' => $this->jobs($job_ids),
            'logs' => $this->logs($job_ids),
            'artifacts' => self::items($events, 'artifacts'),
            'chunks' => self::items($events, 'chunks'),
        ];
    }

    /**
     * The public state after the given event (the latest snapshot at or
     * before it), or null.
     *
     * @return array<string, mixed>|null
     */
    public function get_state_at_event(int $machine_id, int $event_id): ?array
    {
        $table = $this->conn->table(Config::table_state_machine_events());
        $stmt = $this->conn->pdo()->prepare(
            "SELECT state_after FROM {$table}
            WHERE machine_id = :machine_id AND id <= :event_id AND state_after IS NOT NULL
            ORDER BY id DESC LIMIT 1"
        );
        $stmt->execute(['machine_id' => $machine_id, 'event_id' => $event_id]);
        $json = $stmt->fetchColumn();
        $decoded = is_string($json) ? json_decode($json, true) : null;
        if (!is_array($decoded)) {
            return null;
        }
        $out = [];
        foreach ($decoded as $k => $v) {
            $out[(string) $k] = $v;
        }
        return $out;
    }

    /** Delete events older than the given days; the number deleted. */
    public function prune(int $older_than_days): int
    {
        $table = $this->conn->table(Config::table_state_machine_events());
        $stmt = $this->conn->pdo()->prepare("DELETE FROM {$table} WHERE created_at < :cutoff");
        $stmt->execute(['cutoff' => gmdate('Y-m-d H:i:s', time() - $older_than_days * 86400)]);
        return $stmt->rowCount();
    }

    /**
     * @param list<int> $ids
     * @return list<array<string, mixed>>
     */
    private function jobs(array $ids): array
    {
        $rows = [];
        foreach ($this->by_ids(Config::table_jobs(), 'id', $ids) as $row) {
            $row['payload'] = is_string($row['payload']) ? (json_decode($row['payload'], true) ?: []) : [];
            $row['heartbeat_data'] = is_string($row['heartbeat_data']) ? json_decode($row['heartbeat_data'], true) : null;
            $rows[] = $row;
        }
        return $rows;
    }

    /**
     * @param list<int> $ids
     * @return list<array<string, mixed>>
     */
    private function logs(array $ids): array
    {
        $rows = [];
        foreach ($this->by_ids(Config::table_logs(), 'job_id', $ids) as $row) {
            $row['context'] = is_string($row['context']) ? json_decode($row['context'], true) : null;
            $rows[] = $row;
        }
        return $rows;
    }

    /**
     * @param list<int> $ids
     * @return list<array<string, mixed>>
     */
    private function by_ids(string $table, string $column, array $ids): array
    {
        if ($ids === []) {
            return [];
        }
        $table = $this->conn->table($table);
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$table} WHERE {$column} IN (" . implode(', ', array_fill(0, count($ids), '?')) . ') ORDER BY id ASC');
        $stmt->execute($ids);
        return array_values($stmt->fetchAll(PDO::FETCH_ASSOC));
    }

    /**
     * @param list<array<string, mixed>> $events
     * @return list<mixed>
     */
    private static function items(array $events, string $column): array
    {
        $items = [];
        foreach ($events as $event) {
            foreach (is_array($event[$column] ?? null) ? $event[$column] : [] as $item) {
                $items[] = $item;
            }
        }
        return $items;
    }
}
