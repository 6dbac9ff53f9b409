<?php

declare(strict_types=1);

namespace Queuety\Workflow;

use PDO;
use Queuety\Config;
use Queuety\Connection;
use Queuety\Queue;

/**
 * The rows WorkflowBuilder::dispatch() writes, in one transaction: the
 * workflows row, the dispatch key (idempotency_key), the first step's
 * job(s) (FirstStepJobs) and the workflow_started log row.
 *
 * @internal
 */
final class Dispatcher
{
    public function __construct(
        private readonly Connection $conn,
        private readonly Queue $queue_ops,
        private readonly WorkflowSettings $settings,
    ) {
    }

    /**
     * @param list<array<string, mixed>> $steps
     * @param array<string, mixed>       $state
     */
    public function dispatch(string $name, array $steps, array $state): int
    {
        $pdo = $this->conn->pdo();
        $key = $this->settings->idempotency_key;
        // The app clock in UTC, as the plugin computes it (not NOW()).
        $deadline_at = $this->settings->deadline_seconds === null ? null : gmdate('Y-m-d H:i:s', time() + $this->settings->deadline_seconds);

        $pdo->beginTransaction();
        try {
            if ($key !== null && ($existing = $this->existing_workflow_id($pdo, $key)) !== null) {
                $pdo->commit();
                return $existing;
            }
            $table = $this->conn->table(Config::table_workflows());
            $pdo->prepare(
                "INSERT INTO {$table} (name, status, state, current_step, total_steps, deadline_at)
                VALUES (:name, 'running', :state, 0, :total_steps, :deadline_at)"
            )->execute([
                'name' => $name,
                'state' => json_encode($state, JSON_THROW_ON_ERROR),
                'total_steps' => count($steps),
                'deadline_at' => $deadline_at,
            ]);
            $workflow_id = (int) $pdo->lastInsertId();

            if ($key !== null) {
                $keys = $this->conn->table(Config::table_workflow_dispatch_keys());
                $pdo->prepare("INSERT INTO {$keys} (dispatch_key, workflow_id) VALUES (:dispatch_key, :workflow_id)")
                    ->execute(['dispatch_key' => $key, 'workflow_id' => $workflow_id]);
            }

            (new FirstStepJobs($this->queue_ops, $this->settings))->enqueue($steps[0], $workflow_id, 0);
            $this->log_started($workflow_id, $name);

            $pdo->commit();
            return $workflow_id;
        } catch (\PDOException $e) {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
            // Another process inserted the same key between our SELECT and
            // INSERT: its workflow is the one, as with the plugin.
            if ($key !== null && self::is_duplicate_key($e) && ($existing = $this->existing_workflow_id($pdo, $key)) !== null) {
                return $existing;
            }
            throw $e;
        } catch (\Throwable $e) {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
            throw $e;
        }
    }

    private function existing_workflow_id(PDO $pdo, string $key): ?int
    {
        $keys = $this->conn->table(Config::table_workflow_dispatch_keys());
        $stmt = $pdo->prepare("SELECT workflow_id FROM {$keys} WHERE dispatch_key = :dispatch_key LIMIT 1");
        $stmt->execute(['dispatch_key' => $key]);
        $id = $stmt->fetchColumn();
        return $id === false ? null : (int) $id;
    }

    private static function is_duplicate_key(\PDOException $e): bool
    {
        return (string) $e->getCode() === '23000' || ($e->errorInfo[1] ?? null) === 1062;
    }

    /**
     * Logger::log(WorkflowStarted, ...) as the plugin writes it: handler
     * is the workflow's name, queue its queue, the rest NULL.
     */
    private function log_started(int $workflow_id, string $name): void
    {
        $logs = $this->conn->table(Config::table_logs());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$logs}
                (job_id, workflow_id, step_index, handler, queue, event, attempt,
                 duration_ms, memory_peak_kb, error_message, error_class, error_trace, context)
            VALUES
                (NULL, :workflow_id, NULL, :handler, :queue, 'workflow_started', NULL,
                 NULL, NULL, NULL, NULL, NULL, NULL)"
        )->execute(['workflow_id' => $workflow_id, 'handler' => $name, 'queue' => $this->settings->queue]);
    }
}
