<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Workflow\FirstStepJobs;

/**
 * A new workflow from an export (WorkflowExporter's format, the plugin's
 * too): its row (name `<name>_replay_<unix time>`, the source's status
 * and step), the recorded events, logs, signals, wait dependencies,
 * artifacts and chunks copied onto it, a workflow_replayed event, and,
 * when it is running, its current step's job(s).
 */
final class WorkflowReplayer
{
    private const STATUSES = ['running', 'completed', 'failed', 'paused', 'waiting_for_signal', 'waiting_for_workflows', 'cancelled'];

    /**
     * @param array<string, mixed> $export_data
     * @throws \RuntimeException Without a workflow key.
     */
    public static function replay(array $export_data, Connection $conn): int
    {
        if (!is_array($export_data['workflow'] ?? null)) {
            throw new \RuntimeException('Invalid export data: missing workflow key.');
        }
        $wf = $export_data['workflow'];
        $list = static fn (string $k): array => is_array($export_data[$k] ?? null) ? array_filter($export_data[$k], 'is_array') : [];
        $state = is_array($wf['state'] ?? null) ? array_filter($wf['state'], 'is_string', ARRAY_FILTER_USE_KEY) : [];
        $current = is_numeric($wf['current_step'] ?? 0) ? (int) ($wf['current_step'] ?? 0) : 0;
        $total = is_numeric($wf['total_steps'] ?? 0) ? (int) ($wf['total_steps'] ?? 0) : 0;
        $source_status = is_scalar($wf['status'] ?? 'running') ? (string) ($wf['status'] ?? 'running') : 'running';
        $status = in_array($source_status, self::STATUSES, true) ? $source_status : 'running';
        $step = $status === 'completed' ? $total : $current;
        $now = gmdate('Y-m-d H:i:s');
        $json = static fn (mixed $v): ?string => $v === null ? null : json_encode($v, JSON_THROW_ON_ERROR);
        $t = static fn (string $name): string => $conn->table($name);

        $pdo = $conn->pdo();
        $pdo->beginTransaction();
        try {
            $pdo->prepare(
                "INSERT INTO {$t(Config::table_workflows())} (name, status, state, current_step, total_steps, completed_at, failed_at, error_message)
                VALUES (:name, :status, :state, :step, :total, :completed_at, :failed_at, :error_message)"
            )->execute([
                'name' => (is_scalar($wf['name'] ?? '') ? (string) ($wf['name'] ?? '') : '') . '_replay_' . time(),
                'status' => $status,
                'state' => json_encode($state, JSON_THROW_ON_ERROR),
                'step' => $step,
                'total' => $total,
                'completed_at' => $status === 'completed' ? $now : null,
                'failed_at' => $status === 'failed' ? $now : null,
                'error_message' => $status === 'failed' && is_string($wf['error_message'] ?? null) ? $wf['error_message'] : null,
            ]);
            $id = (int) $pdo->lastInsertId();

            $ins = $pdo->prepare(
                "INSERT INTO {$t(Config::table_workflow_events())}
                (workflow_id, job_id, parent_event_id, step_index, step_name, step_type, handler, event, queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at)
                VALUES (:workflow_id, NULL, NULL, :step_index, :step_name, :step_type, :handler, :event, :queue, :attempt, :input, :output, :state_before, :state_after, :context, :artifacts, :chunks, :error, :duration_ms, :created_at)"
            );
            foreach ($list('events') as $e) {
                $ins->execute([
                    'workflow_id' => $id, 'step_index' => is_numeric($e['step_index'] ?? 0) ? (int) ($e['step_index'] ?? 0) : 0,
                    'step_name' => $e['step_name'] ?? null, 'step_type' => $e['step_type'] ?? null, 'handler' => $e['handler'] ?? '',
                    'event' => $e['event'] ?? 'step_completed', 'queue' => $e['queue'] ?? null, 'attempt' => $e['attempt'] ?? null,
                    'input' => $json($e['input'] ?? null), 'output' => $json($e['output'] ?? null),
                    'state_before' => $json($e['state_before'] ?? null), 'state_after' => $json($e['state_after'] ?? null),
                    'context' => $json($e['context'] ?? null), 'artifacts' => $json($e['artifacts'] ?? null),
                    'chunks' => $json($e['chunks'] ?? null), 'error' => $json($e['error'] ?? null),
                    'duration_ms' => $e['duration_ms'] ?? null, 'created_at' => $e['created_at'] ?? $now,
                ]);
            }
            $ins = $pdo->prepare(
                "INSERT INTO {$t(Config::table_logs())} (job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, error_message, context, created_at)
                VALUES (NULL, :workflow_id, :step_index, :handler, :queue, :event, :attempt, :duration_ms, :error_message, :context, :created_at)"
            );
            foreach ($list('logs') as $l) {
                $ins->execute([
                    'workflow_id' => $id, 'step_index' => $l['step_index'] ?? null, 'handler' => $l['handler'] ?? '',
                    'queue' => $l['queue'] ?? 'default', 'event' => $l['event'] ?? 'debug', 'attempt' => $l['attempt'] ?? null,
                    'duration_ms' => $l['duration_ms'] ?? null, 'error_message' => $l['error_message'] ?? null,
                    'context' => $json($l['context'] ?? null), 'created_at' => $l['created_at'] ?? $now,
                ]);
            }
            $ins = $pdo->prepare("INSERT INTO {$t(Config::table_signals())} (workflow_id, signal_name, payload, received_at) VALUES (:workflow_id, :signal_name, :payload, :received_at)");
            foreach ($list('signals') as $s) {
                $ins->execute(['workflow_id' => $id, 'signal_name' => $s['signal_name'] ?? '',
                    'payload' => json_encode($s['payload'] ?? [], JSON_THROW_ON_ERROR), 'received_at' => $s['received_at'] ?? $now]);
            }
            $ins = $pdo->prepare(
                "INSERT INTO {$t(Config::table_workflow_dependencies())} (waiting_workflow_id, step_index, dependency_workflow_id, satisfied_at, created_at)
                VALUES (:waiting_workflow_id, :step_index, :dependency_workflow_id, :satisfied_at, :created_at)"
            );
            foreach ($list('wait_dependencies') as $w) {
                $dependency = is_numeric($w['dependency_workflow_id'] ?? 0) ? (int) ($w['dependency_workflow_id'] ?? 0) : 0;
                if ($dependency < 1) {
                    continue;
                }
                $ins->execute(['waiting_workflow_id' => $id, 'step_index' => is_numeric($w['step_index'] ?? 0) ? (int) ($w['step_index'] ?? 0) : 0,
                    'dependency_workflow_id' => $dependency, 'satisfied_at' => $w['satisfied_at'] ?? null, 'created_at' => $w['created_at'] ?? $now]);
            }
            $ins = $pdo->prepare(
                "INSERT INTO {$t(Config::table_artifacts())} (workflow_id, artifact_key, kind, content, metadata, step_index, created_at, updated_at)
                VALUES (:workflow_id, :artifact_key, :kind, :content, :metadata, :step_index, :created_at, :updated_at)"
            );
            foreach ($list('artifacts') as $a) {
                $kind = is_scalar($a['kind'] ?? 'json') ? (string) ($a['kind'] ?? 'json') : 'json';
                $content = $a['content'] ?? null;
                $ins->execute([
                    'workflow_id' => $id, 'artifact_key' => $a['key'] ?? '', 'kind' => $kind,
                    'content' => strtolower($kind) === 'json' ? json_encode($content, JSON_THROW_ON_ERROR) : (is_scalar($content) ? (string) $content : ''),
                    'metadata' => json_encode($a['metadata'] ?? [], JSON_THROW_ON_ERROR), 'step_index' => $a['step_index'] ?? null,
                    'created_at' => $a['created_at'] ?? $now, 'updated_at' => $a['updated_at'] ?? $now,
                ]);
            }
            $ins = $pdo->prepare(
                "INSERT INTO {$t(Config::table_chunks())} (job_id, workflow_id, step_index, chunk_index, content, created_at)
                VALUES (:job_id, :workflow_id, :step_index, :chunk_index, :content, :created_at)"
            );
            foreach ($list('chunks') as $c) {
                $ins->execute([
                    'job_id' => is_numeric($c['job_id'] ?? 0) ? (int) ($c['job_id'] ?? 0) : 0, 'workflow_id' => $id,
                    'step_index' => $c['step_index'] ?? null, 'chunk_index' => is_numeric($c['chunk_index'] ?? 0) ? (int) ($c['chunk_index'] ?? 0) : 0,
                    'content' => is_scalar($c['content'] ?? '') ? (string) ($c['content'] ?? '') : '', 'created_at' => $c['created_at'] ?? $now,
                ]);
            }
            $context = [
                'source_workflow_id' => is_numeric($wf['id'] ?? 0) ? (int) ($wf['id'] ?? 0) : 0,
                'source_status' => $source_status,
                'definition_version' => $wf['definition_version'] ?? null,
                'definition_hash' => $wf['definition_hash'] ?? null,
            ];
            $pdo->prepare(
                "INSERT INTO {$t(Config::table_workflow_events())} (workflow_id, step_index, handler, event, output, state_after, context)
                VALUES (:workflow_id, :step_index, '__queuety_replay', 'workflow_replayed', :output, :state_after, :context)"
            )->execute([
                'workflow_id' => $id, 'step_index' => $step, 'output' => json_encode($context, JSON_THROW_ON_ERROR),
                'state_after' => json_encode(array_filter($state, static fn (string $k) => !str_starts_with($k, '_'), ARRAY_FILTER_USE_KEY), JSON_THROW_ON_ERROR),
                'context' => json_encode($context, JSON_THROW_ON_ERROR),
            ]);
            $steps = is_array($state['_steps'] ?? null) ? $state['_steps'] : [];
            if ($status === 'running' && is_array($steps[$step] ?? null)) {
                FirstStepJobs::for_state(new Queue($conn), $state)->enqueue($steps[$step], $id, $step);
            }
            $pdo->commit();
            return $id;
        } catch (\Throwable $e) {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
            throw $e;
        }
    }
}
