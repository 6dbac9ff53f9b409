<?php

declare(strict_types=1);

namespace Queuety;

use PDO;

/**
 * A workflow and everything recorded about it (jobs, events, logs,
 * signals, artifacts, chunks, wait dependencies) as one array, in the
 * plugin's export format, so `wp queuety workflow replay` and
 * Queuety::replay_workflow() take it either way.
 */
final class WorkflowExporter
{
    /**
     * @return array<string, mixed>
     * @throws \RuntimeException For a missing workflow.
     */
    public static function export(int $workflow_id, Connection $conn): array
    {
        $wf = self::rows($conn, Config::table_workflows(), 'id', $workflow_id, 'id ASC')[0]
            ?? throw new \RuntimeException("Workflow {$workflow_id} not found.");
        $state = self::json_array($wf['state']);
        $workflow = [
            'id' => (int) $wf['id'],
            'name' => $wf['name'],
            'status' => $wf['status'],
            'state' => $state,
            'current_step' => (int) $wf['current_step'],
            'total_steps' => (int) $wf['total_steps'],
            'parent_workflow_id' => is_scalar($wf['parent_workflow_id']) && $wf['parent_workflow_id'] ? (int) $wf['parent_workflow_id'] : null,
            'parent_step_index' => is_scalar($wf['parent_step_index']) ? (int) $wf['parent_step_index'] : null,
            'started_at' => $wf['started_at'],
            'completed_at' => $wf['completed_at'],
            'failed_at' => $wf['failed_at'],
            'error_message' => $wf['error_message'],
            'deadline_at' => $wf['deadline_at'] ?? null,
            'definition_version' => $state['_definition_version'] ?? null,
            'definition_hash' => $state['_definition_hash'] ?? null,
            'idempotency_key' => $state['_idempotency_key'] ?? null,
        ];
        $jobs = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'queue' => self::str($r['queue']), 'handler' => self::str($r['handler']),
            'payload' => self::json_array($r['payload']), 'priority' => (int) $r['priority'], 'status' => self::str($r['status']),
            'attempts' => (int) $r['attempts'], 'max_attempts' => (int) $r['max_attempts'], 'step_index' => self::int($r['step_index']),
            'available_at' => self::str($r['available_at']), 'reserved_at' => self::str($r['reserved_at']),
            'completed_at' => self::str($r['completed_at']), 'failed_at' => self::str($r['failed_at']),
            'error_message' => self::str($r['error_message']), 'created_at' => self::str($r['created_at']),
        ], self::rows($conn, Config::table_jobs(), 'workflow_id', $workflow_id, 'id ASC'));
        $events = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'job_id' => self::int($r['job_id']), 'parent_event_id' => self::int($r['parent_event_id']),
            'step_index' => (int) $r['step_index'], 'step_name' => self::str($r['step_name']), 'step_type' => self::str($r['step_type']),
            'handler' => self::str($r['handler']), 'event' => self::str($r['event']), 'queue' => self::str($r['queue']),
            'attempt' => self::int($r['attempt']), 'input' => self::json_or_null($r['input']), 'output' => self::json_or_null($r['output']),
            'state_before' => self::json_or_null($r['state_before']), 'state_after' => self::json_or_null($r['state_after']),
            'context' => self::json_or_null($r['context']), 'artifacts' => self::json_or_null($r['artifacts']),
            'chunks' => self::json_or_null($r['chunks']), 'error' => self::json_or_null($r['error']),
            'duration_ms' => self::int($r['duration_ms']), 'created_at' => self::str($r['created_at']),
        ], self::rows($conn, Config::table_workflow_events(), 'workflow_id', $workflow_id, 'id ASC'));
        $logs = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'job_id' => self::int($r['job_id']), 'step_index' => self::int($r['step_index']),
            'handler' => self::str($r['handler']), 'queue' => self::str($r['queue']), 'event' => self::str($r['event']),
            'attempt' => self::int($r['attempt']), 'duration_ms' => self::int($r['duration_ms']),
            'error_message' => self::str($r['error_message']), 'context' => self::json_or_null($r['context']),
            'created_at' => self::str($r['created_at']),
        ], self::rows($conn, Config::table_logs(), 'workflow_id', $workflow_id, 'id ASC'));
        $signals = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'workflow_id' => (int) $r['workflow_id'], 'signal_name' => self::str($r['signal_name']),
            'payload' => self::json_array($r['payload']), 'received_at' => self::str($r['received_at']),
        ], self::rows($conn, Config::table_signals(), 'workflow_id', $workflow_id, 'id ASC'));
        $waits = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'waiting_workflow_id' => (int) $r['waiting_workflow_id'], 'step_index' => (int) $r['step_index'],
            'dependency_workflow_id' => (int) $r['dependency_workflow_id'], 'satisfied_at' => self::str($r['satisfied_at']),
            'created_at' => self::str($r['created_at']),
        ], self::rows($conn, Config::table_workflow_dependencies(), 'waiting_workflow_id', $workflow_id, 'id ASC'));
        $artifacts = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'workflow_id' => (int) $r['workflow_id'], 'key' => self::str($r['artifact_key']),
            'kind' => self::str($r['kind']),
            'content' => strtolower((string) $r['kind']) === 'json' ? self::json_or_null($r['content']) : $r['content'],
            'metadata' => self::json_array($r['metadata']), 'step_index' => self::int($r['step_index']),
            'created_at' => self::str($r['created_at']), 'updated_at' => self::str($r['updated_at']),
        ], self::rows($conn, Config::table_artifacts(), 'workflow_id', $workflow_id, 'artifact_key ASC'));
        $chunks = array_map(static fn (array $r): array => [
            'id' => (int) $r['id'], 'job_id' => (int) $r['job_id'], 'workflow_id' => (int) $r['workflow_id'],
            'step_index' => self::int($r['step_index']), 'chunk_index' => (int) $r['chunk_index'], 'content' => $r['content'],
            'created_at' => self::str($r['created_at']),
        ], self::rows($conn, Config::table_chunks(), 'workflow_id', $workflow_id, 'step_index ASC, chunk_index ASC, id ASC'));
        return [
            'workflow' => $workflow,
            'jobs' => $jobs,
            'events' => $events,
            'logs' => $logs,
            'signals' => $signals,
            'artifacts' => $artifacts,
            'chunks' => $chunks,
            'wait_dependencies' => $waits,
            'exported_at' => gmdate('c'),
            'queuety_version' => defined('QUEUETY_VERSION') ? constant('QUEUETY_VERSION') : 'dev',
        ];
    }

    /** @return list<array<string, mixed>> */
    private static function rows(Connection $conn, string $table, string $column, int $id, string $order): array
    {
        $table = $conn->table($table);
        $stmt = $conn->pdo()->prepare("SELECT * FROM {$table} WHERE {$column} = :id ORDER BY {$order}");
        $stmt->execute(['id' => $id]);
        return array_values($stmt->fetchAll(PDO::FETCH_ASSOC));
    }

    /** @return array<mixed> */
    private static function json_array(mixed $value): array
    {
        $decoded = is_scalar($value) ? json_decode((string) $value, true) : null;
        return is_array($decoded) ? $decoded : [];
    }

    /** @return array<mixed>|null */
    private static function json_or_null(mixed $value): ?array
    {
        return $value === null ? null : self::json_array($value);
    }

    private static function str(mixed $value): ?string
    {
        return is_scalar($value) ? (string) $value : null;
    }

    private static function int(mixed $value): ?int
    {
        return is_scalar($value) && (string) $value !== '' ? (int) $value : null;
    }
}
