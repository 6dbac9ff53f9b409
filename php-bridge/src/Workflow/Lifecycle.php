<?php

declare(strict_types=1);

namespace Queuety\Workflow;

use PDO;
use Queuety\Config;
use Queuety\Connection;
use Queuety\Contracts\Compensation;
use Queuety\Enums\Priority;
use Queuety\Queue;
use Queuety\WorkflowStateView;

/**
 * Workflow::cancel / pause / resume / retry: the plugin's checks,
 * exceptions, row changes and log rows, each in one transaction that
 * locks the workflow row (SELECT ... FOR UPDATE) first. After a cancel
 * commits, the compensation stack and the on_cancel handler run here, in
 * the calling process, as the plugin runs them. Waking the workflows that
 * wait on a cancelled one is left to the daemon's wait sweeper.
 *
 * @internal
 */
final class Lifecycle
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * @throws \RuntimeException "Workflow N not found." / "Workflow N is already completed|cancelled."
     */
    public function cancel(int $workflow_id): void
    {
        $state = $this->in_transaction(function (PDO $pdo) use ($workflow_id): array {
            $row = $this->lock($workflow_id);
            if ($row === null) {
                throw new \RuntimeException("Workflow {$workflow_id} not found.");
            }
            $status = (string) $row['status'];
            if (in_array($status, ['completed', 'cancelled'], true)) {
                throw new \RuntimeException("Workflow {$workflow_id} is already {$status}.");
            }
            $state = self::decode_state($row['state'] ?? null);

            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare("UPDATE {$workflows} SET status = 'cancelled', completed_at = NOW() WHERE id = :id")
                ->execute(['id' => $workflow_id]);

            $jobs = $this->conn->table(Config::table_jobs());
            $pdo->prepare(
                "UPDATE {$jobs} SET status = 'buried', failed_at = NOW(), error_message = :message
                WHERE workflow_id = :workflow_id AND status IN ('pending', 'processing')"
            )->execute(['message' => 'Workflow cancelled', 'workflow_id' => $workflow_id]);

            $this->log('workflow_cancelled', [
                'workflow_id' => $workflow_id,
                'handler' => $row['name'],
                'queue' => $state['_queue'] ?? 'default',
            ]);
            return $state;
        });

        $state = $this->run_compensations($workflow_id, $state, 'cancel');
        $this->persist_state($workflow_id, $state);

        $handler = self::handler_definition($state['_on_cancel'] ?? null);
        if ($handler !== null && class_exists($handler['class'])) {
            try {
                self::call_handle(new $handler['class'](), WorkflowStateView::public_state($state), $handler['payload']);
            } catch (\Throwable $e) {
                $this->log('debug', [
                    'workflow_id' => $workflow_id,
                    'handler' => $handler['class'],
                    'error_message' => $e->getMessage(),
                    'context' => ['type' => 'cancel_handler_failed'],
                ]);
            }
        }
    }

    /**
     * A running workflow becomes paused; any other status (or no such
     * workflow) is left alone. workflow_paused is logged either way, and
     * nothing is thrown: that is the plugin's pause().
     */
    public function pause(int $workflow_id): void
    {
        $this->in_transaction(function (PDO $pdo) use ($workflow_id): void {
            $this->lock($workflow_id);
            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare("UPDATE {$workflows} SET status = 'paused' WHERE id = :id AND status = 'running'")
                ->execute(['id' => $workflow_id]);
            $this->log('workflow_paused', ['workflow_id' => $workflow_id, 'handler' => '']);
        });
    }

    /**
     * @throws \RuntimeException "Workflow N is not paused." (also when there is no such workflow) /
     *                           "Workflow N has no more steps." / "No step handler found for step N."
     */
    public function resume(int $workflow_id): void
    {
        $this->in_transaction(function (PDO $pdo) use ($workflow_id): void {
            $row = $this->lock($workflow_id);
            if ($row === null || $row['status'] !== 'paused') {
                throw new \RuntimeException("Workflow {$workflow_id} is not paused.");
            }
            $state = self::decode_state($row['state'] ?? null);
            $current = self::to_int($row['current_step'] ?? 0);
            if ($current >= self::to_int($row['total_steps'] ?? 0)) {
                throw new \RuntimeException("Workflow {$workflow_id} has no more steps.");
            }
            $step = self::steps($state)[$current] ?? throw new \RuntimeException("No step handler found for step {$current}.");

            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare("UPDATE {$workflows} SET status = 'running' WHERE id = :id")->execute(['id' => $workflow_id]);
            $this->step_jobs($state)->enqueue($step, $workflow_id, $current);
            $this->log('workflow_resumed', ['workflow_id' => $workflow_id, 'handler' => '']);
        });
    }

    /**
     * @throws \RuntimeException "Workflow N not found." / "Workflow N is not in failed state." /
     *                           "Workflow N has already been compensated and cannot be retried." /
     *                           "No step handler found for step N."
     */
    public function retry(int $workflow_id): void
    {
        $this->in_transaction(function (PDO $pdo) use ($workflow_id): void {
            $row = $this->lock($workflow_id);
            if ($row === null) {
                throw new \RuntimeException("Workflow {$workflow_id} not found.");
            }
            if ($row['status'] !== 'failed') {
                throw new \RuntimeException("Workflow {$workflow_id} is not in failed state.");
            }
            $state = self::decode_state($row['state'] ?? null);
            $current = self::to_int($row['current_step'] ?? 0);
            if (!empty($state['_compensated'])) {
                throw new \RuntimeException("Workflow {$workflow_id} has already been compensated and cannot be retried.");
            }
            $step = self::steps($state)[$current] ?? throw new \RuntimeException("No step handler found for step {$current}.");

            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare("UPDATE {$workflows} SET status = 'running', failed_at = NULL, error_message = NULL WHERE id = :id")
                ->execute(['id' => $workflow_id]);

            // A for_each step keeps its results: only its failures go, and
            // the placeholder re-dispatches the items without a result.
            if (is_array($step) && ($step['type'] ?? '') === 'for_each') {
                $runtimes = self::string_keys($state['_for_each_steps'] ?? null);
                $runtime = $runtimes[$current] ?? null;
                if (is_array($runtime)) {
                    $runtime['failures'] = [];
                    $runtime['settled'] = false;
                    $runtimes[$current] = $runtime;
                    $state['_for_each_steps'] = $runtimes;
                    $this->persist_state($workflow_id, $state);
                }
            }
            $this->step_jobs($state)->enqueue($step, $workflow_id, $current);
        });
    }

    /**
     * The compensation stack in reverse: each class that exists gets
     * handle(snapshot[, payload]); a throw is logged as debug and the next
     * one runs. Marks the state compensated (once: a compensated state is
     * returned as is).
     *
     * @param array<string, mixed> $state
     * @return array<string, mixed>
     */
    private function run_compensations(int $workflow_id, array $state, string $reason): array
    {
        if (!empty($state['_compensated'])) {
            return $state;
        }
        $stack = $state['_compensation_stack'] ?? [];
        if (is_array($stack)) {
            for ($i = count($stack) - 1; $i >= 0; --$i) {
                $entry = $stack[$i] ?? null;
                if (!is_array($entry)) {
                    continue;
                }
                $class = $entry['handler'] ?? null;
                if (!is_string($class) || !class_exists($class)) {
                    continue;
                }
                try {
                    $instance = new $class();
                    if ($instance instanceof Compensation || method_exists($instance, 'handle')) {
                        self::call_handle($instance, self::string_keys($entry['state'] ?? null), self::string_keys($entry['payload'] ?? null));
                    }
                } catch (\Throwable $e) {
                    $this->log('debug', [
                        'workflow_id' => $workflow_id,
                        'handler' => $class,
                        'error_message' => $e->getMessage(),
                        'context' => ['type' => 'compensation_failed', 'reason' => $reason],
                    ]);
                }
            }
        }
        $state['_compensated'] = true;
        $state['_compensation_cause'] = $reason;
        return $state;
    }

    /**
     * handle($state) or, with a payload, handle($state, $payload).
     *
     * @param array<string, mixed> $state
     * @param array<string, mixed> $payload
     */
    private static function call_handle(object $handler, array $state, array $payload): void
    {
        if ($payload === []) {
            $handler->handle($state);
            return;
        }
        $handler->handle($state, $payload);
    }

    /**
     * A handler given as a class name or {class|handler, payload|config}.
     *
     * @return array{class: string, payload: array<string, mixed>}|null
     */
    private static function handler_definition(mixed $definition): ?array
    {
        if (is_string($definition) && trim($definition) !== '') {
            return ['class' => trim($definition), 'payload' => []];
        }
        if (!is_array($definition)) {
            return null;
        }
        $class = $definition['class'] ?? $definition['handler'] ?? null;
        if (!is_string($class) || trim($class) === '') {
            return null;
        }
        return ['class' => trim($class), 'payload' => self::string_keys($definition['payload'] ?? $definition['config'] ?? [])];
    }

    /**
     * The job(s) of a step, with the workflow defaults its state carries.
     *
     * @param array<string, mixed> $state
     */
    private function step_jobs(array $state): FirstStepJobs
    {
        $settings = new WorkflowSettings();
        $queue = is_scalar($state['_queue'] ?? 'default') ? (string) ($state['_queue'] ?? 'default') : '';
        $settings->queue = $queue === '' ? 'default' : $queue;
        $settings->priority = Priority::tryFrom(self::to_int($state['_priority'] ?? 0)) ?? Priority::Low;
        $attempts = self::to_int($state['_max_attempts'] ?? 3);
        $settings->max_attempts = $attempts > 0 ? $attempts : 3;
        return new FirstStepJobs(new Queue($this->conn), $settings);
    }

    /**
     * The workflow row, locked for this transaction; null when missing.
     *
     * @return array<string, mixed>|null
     */
    private function lock(int $workflow_id): ?array
    {
        $workflows = $this->conn->table(Config::table_workflows());
        $stmt = $this->conn->pdo()->prepare("SELECT * FROM {$workflows} WHERE id = :id FOR UPDATE");
        $stmt->execute(['id' => $workflow_id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        return is_array($row) ? $row : null;
    }

    /**
     * @template T
     * @param \Closure(PDO): T $fn
     * @return T
     */
    private function in_transaction(\Closure $fn): mixed
    {
        $pdo = $this->conn->pdo();
        $pdo->beginTransaction();
        try {
            $result = $fn($pdo);
            $pdo->commit();
            return $result;
        } catch (\Throwable $e) {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
            throw $e;
        }
    }

    /**
     * @param array<string, mixed> $state
     */
    private function persist_state(int $workflow_id, array $state): void
    {
        $workflows = $this->conn->table(Config::table_workflows());
        $this->conn->pdo()->prepare("UPDATE {$workflows} SET state = :state WHERE id = :id")
            ->execute(['state' => json_encode($state, JSON_THROW_ON_ERROR), 'id' => $workflow_id]);
    }

    /**
     * A logs row as the plugin's Logger::log writes it: handler '' and
     * queue 'default' unless given, an array context JSON-encoded.
     *
     * @param array<string, mixed> $data
     */
    private function log(string $event, array $data): void
    {
        $context = $data['context'] ?? null;
        if (is_array($context)) {
            $context = json_encode($context, JSON_THROW_ON_ERROR);
        }
        $logs = $this->conn->table(Config::table_logs());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$logs}
                (job_id, workflow_id, step_index, handler, queue, event, attempt,
                 duration_ms, memory_peak_kb, error_message, error_class, error_trace, context)
            VALUES
                (NULL, :workflow_id, NULL, :handler, :queue, :event, NULL,
                 NULL, NULL, :error_message, NULL, NULL, :context)"
        )->execute([
            'workflow_id' => $data['workflow_id'],
            'handler' => $data['handler'] ?? '',
            'queue' => $data['queue'] ?? 'default',
            'event' => $event,
            'error_message' => $data['error_message'] ?? null,
            'context' => $context,
        ]);
    }

    /**
     * `_steps`: string (legacy) and array entries, reindexed.
     *
     * @param array<string, mixed> $state
     * @return list<array<string, mixed>|string>
     */
    private static function steps(array $state): array
    {
        $steps = [];
        foreach (is_array($state['_steps'] ?? null) ? $state['_steps'] : [] as $step) {
            if (is_string($step)) {
                $steps[] = $step;
            } elseif (is_array($step)) {
                $steps[] = self::string_keys($step);
            }
        }
        return $steps;
    }

    /**
     * @return array<string, mixed>
     */
    private static function decode_state(mixed $json): array
    {
        if (!is_string($json) || $json === '') {
            return [];
        }
        return self::string_keys(json_decode($json, true));
    }

    /**
     * @return array<string, mixed>
     */
    private static function string_keys(mixed $value): array
    {
        if (!is_array($value)) {
            return [];
        }
        $out = [];
        foreach ($value as $key => $item) {
            $out[(string) $key] = $item;
        }
        return $out;
    }

    private static function to_int(mixed $value): int
    {
        return is_scalar($value) ? (int) $value : 0;
    }
}
