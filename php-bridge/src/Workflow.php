<?php

declare(strict_types=1);

namespace Queuety;

use Queuety\Enums\WorkflowStatus;
use Queuety\Workflow\Lifecycle;

/**
 * The part of Queuety's workflow engine an application calls directly
 * that the bridge covers: storing a signal, reading a workflow's status,
 * and the lifecycle calls (cancel, pause, resume, retry). Everything that
 * advances a workflow is the daemon's (`queuety work --workflows`).
 */
class Workflow
{
    public function __construct(private readonly Connection $conn)
    {
    }

    /**
     * Store a signal row exactly as the plugin does: always, whether or
     * not the workflow exists or is waiting, and never consumed. The
     * plugin then resumes a workflow waiting for it in the same request;
     * the bridge leaves that to the daemon's signal poller, which settles
     * the wait within its poll interval (2 s by default).
     *
     * @param array<mixed> $data
     */
    public function handle_signal(int $workflow_id, string $signal_name, array $data = []): void
    {
        $table = $this->conn->table(Config::table_signals());
        $this->conn->pdo()->prepare(
            "INSERT INTO {$table} (workflow_id, signal_name, payload) VALUES (:workflow_id, :signal_name, :payload)"
        )->execute([
            'workflow_id' => $workflow_id,
            'signal_name' => $signal_name,
            'payload' => json_encode($data, JSON_THROW_ON_ERROR),
        ]);
    }

    /**
     * Cancel a workflow: it becomes cancelled, its pending and processing
     * jobs are buried ("Workflow cancelled") and workflow_cancelled is
     * logged, in one transaction; then, in this process, its compensation
     * stack runs in reverse and its on_cancel handler gets the public
     * state (a handler's exception is logged as debug). The daemon's wait
     * sweeper, not this call, wakes workflows waiting on this one.
     *
     * @throws \RuntimeException When there is no such workflow, or it is already completed or cancelled.
     */
    public function cancel(int $workflow_id): void
    {
        (new Lifecycle($this->conn))->cancel($workflow_id);
    }

    /**
     * Pause a running workflow: the step in flight finishes, the next one
     * is not enqueued. Anything else is left as it is, and, as in the
     * plugin, workflow_paused is logged either way and nothing is thrown.
     */
    public function pause(int $workflow_id): void
    {
        (new Lifecycle($this->conn))->pause($workflow_id);
    }

    /**
     * Resume a paused workflow: running again, its current step's job(s)
     * enqueued, workflow_resumed logged.
     *
     * @throws \RuntimeException When it is not paused (or missing) or has no more steps.
     */
    public function resume(int $workflow_id): void
    {
        (new Lifecycle($this->conn))->resume($workflow_id);
    }

    /**
     * Retry a failed workflow from its failed step: running, failure
     * cleared, the step's job(s) enqueued again (a for_each step keeps
     * its results; its failures are cleared). No log row, as in the plugin.
     *
     * @throws \RuntimeException When it is missing, not failed, or already compensated.
     */
    public function retry(int $workflow_id): void
    {
        (new Lifecycle($this->conn))->retry($workflow_id);
    }

    /**
     * The workflow's status, or null when there is no such workflow. Read
     * fresh each time (the plugin caches it for 2 s).
     */
    public function status(int $workflow_id): ?WorkflowState
    {
        $table = $this->conn->table(Config::table_workflows());
        $stmt = $this->conn->pdo()->prepare(
            "SELECT id, name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index,
                started_at, completed_at, failed_at, deadline_at, error_message
            FROM {$table} WHERE id = :id"
        );
        $stmt->execute(['id' => $workflow_id]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        if (!is_array($row)) {
            return null;
        }
        return self::state_from_row($row, $this->artifact_keys($workflow_id));
    }

    /**
     * Workflows newest first, optionally of one status.
     *
     * @return list<WorkflowState>
     */
    public function list(?WorkflowStatus $status = null, int $limit = 50): array
    {
        $table = $this->conn->table(Config::table_workflows());
        $sql = "SELECT id, name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index,
                started_at, completed_at, failed_at, deadline_at, error_message FROM {$table}";
        $params = [];
        if ($status !== null) {
            $sql .= ' WHERE status = :status';
            $params['status'] = $status->value;
        }
        $stmt = $this->conn->pdo()->prepare($sql . ' ORDER BY id DESC LIMIT ' . max(1, $limit));
        $stmt->execute($params);
        $out = [];
        foreach ($stmt->fetchAll(\PDO::FETCH_ASSOC) as $row) {
            $out[] = self::state_from_row($row, $this->artifact_keys((int) $row['id']));
        }
        return $out;
    }

    /**
     * Dispatch a workflow from a runtime definition (a template's, or
     * WorkflowBuilder::build_runtime_definition()'s).
     *
     * @param array<string, mixed> $definition
     * @param array<string, mixed> $initial_state
     * @param array<string, mixed> $dispatch_options idempotency_key
     * @throws \RuntimeException Without steps.
     */
    public function dispatch_definition(array $definition, array $initial_state = [], array $dispatch_options = []): int
    {
        if (empty($definition['steps']) || !is_array($definition['steps'])) {
            throw new \RuntimeException('Workflow definition must have at least one step.');
        }
        $name = is_string($definition['name'] ?? null) && trim($definition['name']) !== '' ? trim($definition['name']) : 'workflow';
        $state = self::state_from_definition($definition, $initial_state, $dispatch_options);
        // The dispatcher's settings: what the first step's jobs, the
        // deadline, the key and the log row need, from the state written.
        $settings = new Workflow\WorkflowSettings();
        $settings->queue = $state['_queue'];
        $settings->priority = Enums\Priority::tryFrom($state['_priority']) ?? Enums\Priority::Low;
        $settings->max_attempts = $state['_max_attempts'];
        $settings->deadline_seconds = $state['_deadline_seconds'] ?? null;
        $settings->idempotency_key = $state['_idempotency_key'] ?? null;
        $steps = array_values($state['_steps']);
        return (new Workflow\Dispatcher($this->conn, new Queue($this->conn), $settings))->dispatch($name, $steps, $state);
    }

    /**
     * The state the plugin writes for a dispatched definition: the
     * caller's state, then the reserved keys in the plugin's order (its
     * handlers normalized to {class, payload}; budgets, deadline and
     * prune only when positive integers).
     *
     * @param array<string, mixed> $definition
     * @param array<string, mixed> $initial
     * @param array<string, mixed> $options
     * @return array<string, mixed>
     * @throws \InvalidArgumentException For a bad idempotency key.
     * @throws \RuntimeException When the initial state exceeds max_state_bytes.
     */
    private static function state_from_definition(array $definition, array $initial, array $options): array
    {
        $int = static fn (mixed $v): int => is_scalar($v) ? (int) $v : 0;
        $handler = static function (mixed $d): ?array {
            if (is_string($d) && trim($d) !== '') {
                return ['class' => trim($d), 'payload' => []];
            }
            $class = is_array($d) ? ($d['class'] ?? $d['handler'] ?? null) : null;
            if (!is_string($class) || trim($class) === '') {
                return null;
            }
            $payload = $d['payload'] ?? $d['config'] ?? [];
            return ['class' => trim($class), 'payload' => is_array($payload) ? $payload : []];
        };
        $state = $initial;
        $state['_steps'] = is_array($definition['steps'] ?? null) ? $definition['steps'] : [];
        $state['_queue'] = is_string($definition['queue'] ?? null) && trim($definition['queue']) !== '' ? trim($definition['queue']) : 'default';
        $state['_priority'] = $int($definition['priority'] ?? 0);
        $state['_max_attempts'] = max(1, $int($definition['max_attempts'] ?? 3));
        if (($cancel = $handler($definition['cancel_handler'] ?? null)) !== null) {
            $state['_on_cancel'] = $cancel;
        }
        if (is_int($definition['prune_after'] ?? null) && $definition['prune_after'] > 0) {
            $state['_prune_state_after'] = $definition['prune_after'];
            $state['_step_outputs'] = [];
        }
        if (is_int($definition['deadline_seconds'] ?? null) && $definition['deadline_seconds'] > 0) {
            $state['_deadline_seconds'] = $definition['deadline_seconds'];
        }
        if (($deadline = $handler($definition['deadline_handler'] ?? null)) !== null) {
            $state['_on_deadline'] = $deadline;
        }
        if (is_string($definition['definition_version'] ?? null) && trim($definition['definition_version']) !== '') {
            $state['_definition_version'] = trim($definition['definition_version']);
        }
        if (is_string($definition['definition_hash'] ?? null) && trim($definition['definition_hash']) !== '') {
            $state['_definition_hash'] = trim($definition['definition_hash']);
        }
        $budget = [];
        foreach (['max_transitions', 'max_for_each_items', 'max_state_bytes', 'max_cost_units', 'max_started_workflows'] as $key) {
            $value = is_array($definition['workflow_budget'] ?? null) ? ($definition['workflow_budget'][$key] ?? null) : null;
            if (is_int($value) && $value > 0) {
                $budget[$key] = $value;
            }
        }
        if ($budget !== []) {
            $state['_workflow_budget'] = $budget;
            $state['_workflow_counters'] = ['transitions' => 0, 'cost_units' => 0, 'started_workflows' => 0];
            if (isset($budget['max_state_bytes']) && strlen(json_encode($initial, JSON_THROW_ON_ERROR)) > $budget['max_state_bytes']) {
                throw new \RuntimeException(sprintf('Workflow initial state exceeds configured max_state_bytes budget of %d.', $budget['max_state_bytes']));
            }
        }
        if (!empty($definition['compensate_on_failure'])) {
            $state['_compensate_on_failure'] = true;
        }
        $key = $options['idempotency_key'] ?? null;
        if ($key !== null) {
            if (!is_string($key)) {
                throw new \InvalidArgumentException('Workflow idempotency_key must be a string.');
            }
            $key = trim($key);
            if ($key === '') {
                throw new \InvalidArgumentException('Workflow idempotency_key cannot be empty.');
            }
            $state['_idempotency_key'] = $key;
        }
        return $state;
    }

    /**
     * Put a workflow back to the state recorded when $to_step completed and
     * run it on from the next step: the public state from that step's
     * event, the runtime keys from the live row; pending or running jobs
     * of the abandoned path are buried so no worker continues it.
     *
     * @throws \RuntimeException Without a recorded state for the step, or for a missing workflow.
     */
    public function rewind(int $workflow_id, int $to_step): void
    {
        $snapshot = (new WorkflowEventLog($this->conn))->get_state_at_step($workflow_id, $to_step)
            ?? throw new \RuntimeException("No recorded state found for workflow {$workflow_id} at step {$to_step}.");
        $this->in_transaction(function (\PDO $pdo) use ($workflow_id, $to_step, $snapshot): void {
            $row = $this->lock($pdo, $workflow_id);
            $live = self::decode_state($row['state']);
            $state = $snapshot;
            $state['_steps'] = is_array($live['_steps'] ?? null) ? $live['_steps'] : [];
            $state['_queue'] = is_string($live['_queue'] ?? null) && $live['_queue'] !== '' ? $live['_queue'] : 'default';
            $state['_priority'] = is_scalar($live['_priority'] ?? 0) ? (int) ($live['_priority'] ?? 0) : 0;
            $attempts = is_scalar($live['_max_attempts'] ?? 3) ? (int) ($live['_max_attempts'] ?? 3) : 3;
            $state['_max_attempts'] = $attempts > 0 ? $attempts : 3;
            foreach ($live as $key => $value) {
                if (str_starts_with((string) $key, '_') && !isset($state[$key])) {
                    $state[$key] = $value;
                }
            }
            $next = $to_step + 1;
            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare(
                "UPDATE {$workflows} SET state = :state, current_step = :step, status = 'running', error_message = NULL, failed_at = NULL WHERE id = :id"
            )->execute(['state' => json_encode($state, JSON_THROW_ON_ERROR), 'step' => $next, 'id' => $workflow_id]);
            $jobs = $this->conn->table(Config::table_jobs());
            $pdo->prepare(
                "UPDATE {$jobs} SET status = 'buried', error_message = 'Superseded by workflow rewind'
                WHERE workflow_id = :wf_id AND status IN ('pending', 'processing')"
            )->execute(['wf_id' => $workflow_id]);
            $steps = array_values($state['_steps']);
            if (isset($steps[$next]) && (is_array($steps[$next]) || is_string($steps[$next]))) {
                Workflow\FirstStepJobs::for_state(new Queue($this->conn), $state)->enqueue($steps[$next], $workflow_id, $next);
            }
            (new Logger($this->conn))->log(Enums\LogEvent::WorkflowRewound, [
                'workflow_id' => $workflow_id, 'handler' => (string) $row['name'], 'queue' => $state['_queue'],
                'context' => ['rewound_to_step' => $to_step],
            ]);
        });
    }

    /**
     * A copy of the workflow (name `<name>_fork_<unix time>`, running, the
     * same state and step) whose current step is enqueued; the original is
     * untouched. Both get a workflow_forked log row.
     *
     * @throws \RuntimeException For a missing workflow.
     */
    public function fork(int $workflow_id): int
    {
        return $this->in_transaction(function (\PDO $pdo) use ($workflow_id): int {
            $row = $this->lock($pdo, $workflow_id);
            $state = self::decode_state($row['state']);
            $current = (int) $row['current_step'];
            $name = (string) $row['name'];
            $fork_name = $name . '_fork_' . time();
            $workflows = $this->conn->table(Config::table_workflows());
            $pdo->prepare(
                "INSERT INTO {$workflows} (name, status, state, current_step, total_steps) VALUES (:name, 'running', :state, :step, :total)"
            )->execute(['name' => $fork_name, 'state' => json_encode($state, JSON_THROW_ON_ERROR), 'step' => $current, 'total' => (int) $row['total_steps']]);
            $fork_id = (int) $pdo->lastInsertId();
            $steps = is_array($state['_steps'] ?? null) ? array_values($state['_steps']) : [];
            if (isset($steps[$current]) && (is_array($steps[$current]) || is_string($steps[$current]))) {
                Workflow\FirstStepJobs::for_state(new Queue($this->conn), $state)->enqueue($steps[$current], $fork_id, $current);
            }
            $queue = is_string($state['_queue'] ?? null) && $state['_queue'] !== '' ? $state['_queue'] : 'default';
            $logger = new Logger($this->conn);
            $logger->log(Enums\LogEvent::WorkflowForked, ['workflow_id' => $workflow_id, 'handler' => $name, 'queue' => $queue, 'context' => ['forked_workflow_id' => $fork_id]]);
            $logger->log(Enums\LogEvent::WorkflowForked, ['workflow_id' => $fork_id, 'handler' => $fork_name, 'queue' => $queue, 'context' => ['forked_from_workflow_id' => $workflow_id]]);
            return $fork_id;
        });
    }

    /**
     * @return array<string, mixed>
     * @throws \RuntimeException For a missing workflow.
     */
    private function lock(\PDO $pdo, int $workflow_id): array
    {
        $workflows = $this->conn->table(Config::table_workflows());
        $stmt = $pdo->prepare("SELECT * FROM {$workflows} WHERE id = :id FOR UPDATE");
        $stmt->execute(['id' => $workflow_id]);
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        return is_array($row) ? $row : throw new \RuntimeException("Workflow {$workflow_id} not found.");
    }

    /**
     * @template T
     * @param \Closure(\PDO): T $fn
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
     * @param array<string, mixed> $row
     * @param list<string>         $artifact_keys
     */
    private static function state_from_row(array $row, array $artifact_keys): WorkflowState
    {
        $state = self::decode_state($row['state'] ?? null);
        $current = (int) $row['current_step'];
        $wait = self::wait_context($state);
        $step = self::step_at($state, $current);
        $waiting_for = $wait['waiting_for'] ?? $wait['signal_names'] ?? null;

        return new WorkflowState(
            workflow_id: (int) $row['id'],
            name: (string) $row['name'],
            status: WorkflowStatus::from((string) $row['status']),
            current_step: $current,
            total_steps: (int) $row['total_steps'],
            state: WorkflowStateView::public_state($state),
            parent_workflow_id: $row['parent_workflow_id'] ? (int) $row['parent_workflow_id'] : null,
            parent_step_index: $row['parent_step_index'] !== null ? (int) $row['parent_step_index'] : null,
            wait_type: is_string($wait['type'] ?? null) ? $wait['type'] : null,
            waiting_for: is_array($waiting_for) ? array_values($waiting_for) : null,
            definition_version: WorkflowStateView::trimmed($state, '_definition_version'),
            definition_hash: WorkflowStateView::trimmed($state, '_definition_hash'),
            idempotency_key: WorkflowStateView::trimmed($state, '_idempotency_key'),
            budget: WorkflowStateView::budget($state),
            current_step_name: is_string($step['name'] ?? null) ? $step['name'] : null,
            wait_mode: is_string($wait['wait_mode'] ?? null) ? $wait['wait_mode'] : null,
            artifact_count: count($artifact_keys),
            artifact_keys: $artifact_keys,
            current_step_type: self::step_type($state, $current),
            started_at: self::nullable_string($row['started_at'] ?? null),
            completed_at: self::nullable_string($row['completed_at'] ?? null),
            failed_at: self::nullable_string($row['failed_at'] ?? null),
            deadline_at: self::nullable_string($row['deadline_at'] ?? null),
            error_message: self::nullable_string($row['error_message'] ?? null),
        );
    }

    /**
     * @return array<string, mixed>
     */
    private static function decode_state(mixed $json): array
    {
        if (!is_string($json) || $json === '') {
            return [];
        }
        $state = json_decode($json, true);
        return is_array($state) ? $state : [];
    }

    /**
     * `_wait` (string keys only), or the legacy `_waiting_for_signal`.
     *
     * @param array<string, mixed> $state
     * @return array<string, mixed>
     */
    private static function wait_context(array $state): array
    {
        $wait = $state['_wait'] ?? null;
        if (is_array($wait) && isset($wait['type'])) {
            return array_filter($wait, 'is_string', ARRAY_FILTER_USE_KEY);
        }
        $legacy = $state['_waiting_for_signal'] ?? null;
        if (is_string($legacy) && $legacy !== '') {
            return ['type' => 'wait_for_signal', 'signal_names' => [$legacy], 'wait_mode' => 'all'];
        }
        return [];
    }

    /**
     * A `_steps` entry; a plain string is a legacy single step.
     *
     * @param array<string, mixed> $state
     * @return array<string, mixed>|null
     */
    private static function step_at(array $state, int $index): ?array
    {
        $step = is_array($state['_steps'] ?? null) ? ($state['_steps'][$index] ?? null) : null;
        if (is_string($step)) {
            return ['type' => 'single', 'name' => (string) $index, 'class' => $step];
        }
        return is_array($step) ? $step : null;
    }

    /**
     * @param array<string, mixed> $state
     */
    private static function step_type(array $state, int $index): ?string
    {
        $step = self::step_at($state, $index);
        if ($step === null) {
            return null;
        }
        return is_string($step['type'] ?? null) ? $step['type'] : 'single';
    }

    private static function nullable_string(mixed $value): ?string
    {
        return $value === null ? null : (string) $value;
    }

    /**
     * @return list<string>
     */
    private function artifact_keys(int $workflow_id): array
    {
        $table = $this->conn->table(Config::table_artifacts());
        $stmt = $this->conn->pdo()->prepare("SELECT artifact_key FROM {$table} WHERE workflow_id = :id ORDER BY artifact_key ASC");
        $stmt->execute(['id' => $workflow_id]);
        return array_values(array_map('strval', $stmt->fetchAll(\PDO::FETCH_COLUMN)));
    }
}
