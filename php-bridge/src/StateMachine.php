<?php

declare(strict_types=1);

namespace Queuety;

use PDO;
use Queuety\Contracts\StateGuard;
use Queuety\Enums\Priority;
use Queuety\Enums\StateMachineStatus;

/**
 * State machines on the plugin's tables without WordPress: dispatching a
 * definition (the row, machine_started, then the initial state's action
 * job or its lifecycle event), external events (guards run here, in this
 * process, as in the plugin), status, listing, timeline and trace. The
 * action jobs (`__queuety_state_machine_action`) are run by `queuety work`
 * (Go actions or PHP ones in its pool) or by the plugin's workers.
 */
class StateMachine
{
    public function __construct(
        private readonly Connection $conn,
        private readonly Queue $queue,
        private readonly ?StateMachineEventLog $event_log = null,
    ) {
    }

    /**
     * @param array<string, mixed> $definition StateMachineBuilder::build_runtime_definition()'s shape.
     * @param array<string, mixed> $initial_state
     * @param array<string, mixed> $options idempotency_key
     * @throws \InvalidArgumentException For a definition without a valid initial state or a bad key.
     */
    public function dispatch_definition(array $definition, array $initial_state = [], array $options = []): int
    {
        $initial_raw = $definition['initial_state'] ?? '';
        $initial = is_scalar($initial_raw) ? trim((string) $initial_raw) : '';
        $states = $definition['states'] ?? [];
        if ($initial === '' || !is_array($states) || !isset($states[$initial])) {
            throw new \InvalidArgumentException('State machine definition must contain a valid initial_state.');
        }
        $key = self::dispatch_key($options['idempotency_key'] ?? ($definition['idempotency_key'] ?? null));
        $status = self::status_for_entered_state(self::as_array($states[$initial]));
        $name = is_scalar($definition['name'] ?? 'machine') ? (string) ($definition['name'] ?? 'machine') : 'machine';
        $now = gmdate('Y-m-d H:i:s');
        $table = $this->conn->table(Config::table_state_machines());
        $pdo = $this->conn->pdo();
        $pdo->beginTransaction();
        try {
            if ($key !== null && ($existing = $this->machine_for_key($key)) !== null) {
                $pdo->commit();
                return $existing;
            }
            $pdo->prepare(
                "INSERT INTO {$table}
                (name, status, current_state, state, definition, definition_hash, definition_version, idempotency_key, completed_at, failed_at, error_message)
                VALUES
                (:name, :status, :current_state, :state, :definition, :definition_hash, :definition_version, :idempotency_key, :completed_at, :failed_at, :error_message)"
            )->execute([
                'name' => $name,
                'status' => $status->value,
                'current_state' => $initial,
                'state' => json_encode($initial_state, JSON_THROW_ON_ERROR),
                'definition' => json_encode($definition, JSON_THROW_ON_ERROR),
                'definition_hash' => $definition['definition_hash'] ?? null,
                'definition_version' => $definition['definition_version'] ?? null,
                'idempotency_key' => $key,
                'completed_at' => in_array($status, [StateMachineStatus::Completed, StateMachineStatus::Cancelled], true) ? $now : null,
                'failed_at' => $status === StateMachineStatus::Failed ? $now : null,
                'error_message' => null,
            ]);
            $id = (int) $pdo->lastInsertId();
            $out = ['status' => $status->value];
            $this->event([
                'machine_id' => $id, 'state_name' => $initial, 'event' => 'machine_started',
                'input' => $initial_state, 'output' => $out, 'state_after' => $initial_state,
                'context' => ['name' => $name, 'initial_state' => $initial, 'definition_hash' => $definition['definition_hash'] ?? null],
            ]);
            if ($status === StateMachineStatus::Running) {
                $this->enqueue_action($id, $definition, $initial, null, [], $initial_state);
            } else {
                $this->lifecycle_event($id, $initial, self::lifecycle_name($status), null, $initial_state, $out);
            }
            $pdo->commit();
            return $id;
        } catch (\PDOException $e) {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
            // Another dispatch with the key won the race: its machine.
            if ($key !== null && ((string) $e->getCode() === '23000' || ($e->errorInfo[1] ?? null) === 1062)
                && ($existing = $this->machine_for_key($key)) !== null) {
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

    public function get_status(int $machine_id): ?StateMachineState
    {
        $table = $this->conn->table(Config::table_state_machines());
        $stmt = $this->conn->pdo()->prepare(
            "SELECT id, name, status, current_state, state, definition, definition_hash, definition_version, idempotency_key, error_message
            FROM {$table} WHERE id = :id LIMIT 1"
        );
        $stmt->execute(['id' => $machine_id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        if (!is_array($row)) {
            return null;
        }
        $definition = self::as_array(is_string($row['definition']) ? json_decode($row['definition'], true) : null);
        $current = (string) $row['current_state'];
        $state_def = self::as_array(self::as_array($definition['states'] ?? null)[$current] ?? null);
        $events = [];
        foreach (is_array($state_def['transitions'] ?? null) ? $state_def['transitions'] : [] as $t) {
            $events[] = is_array($t) && is_scalar($t['event'] ?? '') ? (string) ($t['event'] ?? '') : '';
        }
        $text = static fn (mixed $v): ?string => !empty($v) && is_scalar($v) ? (string) $v : null;
        return new StateMachineState(
            machine_id: (int) $row['id'],
            name: (string) $row['name'],
            status: StateMachineStatus::from((string) $row['status']),
            current_state: $current,
            state: self::as_array(is_string($row['state']) ? json_decode($row['state'], true) : null),
            available_events: array_values(array_unique($events)),
            definition_version: $text($row['definition_version']),
            definition_hash: $text($row['definition_hash']),
            idempotency_key: $text($row['idempotency_key']),
            error_message: $text($row['error_message']),
            current_action: self::action_definition($state_def)['class'] ?? null,
            terminal_status: is_string($state_def['terminal_status'] ?? null) ? $state_def['terminal_status'] : null,
        );
    }

    /**
     * Machines newest first.
     *
     * @return list<array<string, mixed>>
     */
    public function list(int $limit = 50, ?string $status = null): array
    {
        $table = $this->conn->table(Config::table_state_machines());
        $sql = "SELECT id, name, status, current_state, definition_version, definition_hash, idempotency_key, started_at, updated_at, completed_at, failed_at FROM {$table}";
        $params = [];
        if ($status !== null) {
            $sql .= ' WHERE status = :status';
            $params['status'] = $status;
        }
        $sql .= ' ORDER BY id DESC LIMIT ' . max(1, $limit);
        $stmt = $this->conn->pdo()->prepare($sql);
        $stmt->execute($params);
        return array_values($stmt->fetchAll(PDO::FETCH_ASSOC));
    }

    /** @return list<array<string, mixed>> */
    public function timeline(int $machine_id, ?int $limit = 100, int $offset = 0): array
    {
        return $this->event_log === null ? [] : $this->event_log->get_timeline($machine_id, $limit, $offset);
    }

    /** @return array<string, mixed> */
    public function trace(int $machine_id): array
    {
        return $this->event_log === null ? [] : $this->event_log->get_trace($machine_id);
    }

    /**
     * Deliver an external event to a machine waiting for one: the payload's
     * keys not starting with "_" are merged into its state, the first
     * transition for the event whose guard allows it is taken, and the
     * entered state's action job or lifecycle event written. A refused
     * event leaves its event_rejected row and throws.
     *
     * @param array<mixed> $payload
     * @throws \InvalidArgumentException For an empty event name.
     * @throws \RuntimeException When the machine is missing, not waiting, or no transition allows the event.
     */
    public function send_event(int $machine_id, string $event_name, array $payload = []): void
    {
        $event_name = trim($event_name);
        if ($event_name === '') {
            throw new \InvalidArgumentException('State machine event name cannot be empty.');
        }
        $pdo = $this->conn->pdo();
        $m = $this->lock($machine_id);
        try {
            if ($m['status'] !== StateMachineStatus::WaitingEvent) {
                throw new \RuntimeException(sprintf("State machine %d is not waiting for external events; current status is '%s'.", $machine_id, $m['status']->value));
            }
            $state = $m['state'];
            foreach ($payload as $key => $value) {
                if (is_string($key) && !str_starts_with($key, '_')) {
                    $state[$key] = $value;
                }
            }
            $this->event([
                'machine_id' => $machine_id, 'state_name' => $m['current_state'], 'event' => 'event_received', 'event_name' => $event_name,
                'input' => $payload, 'output' => $payload, 'state_before' => $m['state'], 'state_after' => $state,
                'context' => ['event' => $event_name],
            ]);
            $this->transition($m, $state, $event_name, $payload);
            $pdo->commit();
        } catch (\Throwable $e) {
            if ($pdo->inTransaction()) {
                $this->event([
                    'machine_id' => $machine_id, 'state_name' => $m['current_state'], 'event' => 'event_rejected', 'event_name' => $event_name,
                    'input' => $payload, 'output' => ['rejected' => true, 'message' => $e->getMessage()],
                    'state_before' => $m['state'], 'state_after' => $m['state'], 'context' => ['event' => $event_name],
                    'error' => self::error_payload($e),
                ]);
                $pdo->commit();
            }
            throw $e;
        } finally {
            if ($pdo->inTransaction()) {
                $pdo->rollBack();
            }
        }
    }

    /**
     * Begin a transaction and lock the machine's row.
     *
     * @return array{row: array<string, mixed>, definition: array<string, mixed>, state: array<string, mixed>, state_def: array<string, mixed>, current_state: string, status: StateMachineStatus}
     */
    private function lock(int $machine_id): array
    {
        $table = $this->conn->table(Config::table_state_machines());
        $pdo = $this->conn->pdo();
        $pdo->beginTransaction();
        $stmt = $pdo->prepare("SELECT * FROM {$table} WHERE id = :id FOR UPDATE");
        $stmt->execute(['id' => $machine_id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        if (!is_array($row)) {
            $pdo->rollBack();
            throw new \RuntimeException("State machine {$machine_id} not found.");
        }
        $definition = self::as_array(is_string($row['definition']) ? json_decode($row['definition'], true) : null);
        $current = (string) $row['current_state'];
        $state_def = self::as_array($definition['states'] ?? null)[$current] ?? null;
        if (!is_array($state_def)) {
            $pdo->rollBack();
            throw new \RuntimeException("State machine {$machine_id} is missing persisted state definition '{$current}'.");
        }
        return [
            'row' => $row,
            'definition' => $definition,
            'state' => self::as_array(is_string($row['state']) ? json_decode($row['state'], true) : null),
            'state_def' => self::as_array($state_def),
            'current_state' => $current,
            'status' => StateMachineStatus::from((string) $row['status']),
        ];
    }

    /**
     * @param array<string, mixed> $m     lock()'s context
     * @param array<string, mixed> $state
     * @param array<mixed>         $event_payload
     */
    private function transition(array $m, array $state, string $event_name, array $event_payload): void
    {
        $id = (int) $m['row']['id'];
        $current = $m['current_state'];
        $transition = $this->resolve_transition($id, $current, $m['state_def'], $state, $event_name, $event_payload)
            ?? throw new \RuntimeException(sprintf("State '%s' does not allow event '%s'.", $current, $event_name));
        $target = is_scalar($transition['target_state'] ?? '') ? (string) ($transition['target_state'] ?? '') : '';
        $target_def = self::as_array($m['definition']['states'] ?? null)[$target] ?? null;
        if (!is_array($target_def)) {
            throw new \RuntimeException(sprintf("State machine target state '%s' is missing from the definition.", $target));
        }
        $name = $transition['name'] ?? $event_name;
        $this->event([
            'machine_id' => $id, 'state_name' => $current, 'event' => 'transitioned', 'event_name' => $event_name,
            'transition_name' => $name, 'input' => $event_payload,
            'output' => ['from' => $current, 'to' => $target, 'name' => $name, 'event' => $event_name],
            'state_before' => $state, 'state_after' => $state, 'context' => ['from' => $current, 'to' => $target],
        ]);
        $status = self::status_for_entered_state(self::as_array($target_def));
        $now = gmdate('Y-m-d H:i:s');
        $table = $this->conn->table(Config::table_state_machines());
        $this->conn->pdo()->prepare(
            "UPDATE {$table} SET status = :status, current_state = :current_state, state = :state,
                completed_at = :completed_at, failed_at = :failed_at, error_message = :error_message WHERE id = :id"
        )->execute([
            'status' => $status->value,
            'current_state' => $target,
            'state' => json_encode($state, JSON_THROW_ON_ERROR),
            'completed_at' => in_array($status, [StateMachineStatus::Completed, StateMachineStatus::Cancelled], true) ? $now : null,
            'failed_at' => $status === StateMachineStatus::Failed ? $now : null,
            'error_message' => null,
            'id' => $id,
        ]);
        if ($status === StateMachineStatus::Running) {
            $this->enqueue_action($id, $m['definition'], $target, $event_name, $event_payload, $state);
        } else {
            $this->lifecycle_event($id, $target, self::lifecycle_name($status), $event_name, $state, $event_payload);
        }
    }

    /**
     * The first transition for the event whose guard (if any) allows it,
     * with each guard's guard_started and guard_completed (or
     * guard_failed) rows.
     *
     * @param array<string, mixed> $state_def
     * @param array<string, mixed> $state
     * @param array<mixed>         $event_payload
     * @return array<string, mixed>|null
     */
    private function resolve_transition(int $id, string $current, array $state_def, array $state, string $event_name, array $event_payload): ?array
    {
        foreach (is_array($state_def['transitions'] ?? null) ? $state_def['transitions'] : [] as $t) {
            if (!is_array($t)) {
                continue;
            }
            $t = self::as_array($t);
            if ($event_name !== (is_scalar($t['event'] ?? '') ? (string) ($t['event'] ?? '') : '')) {
                continue;
            }
            $guard_def = self::handler_definition($t['guard'] ?? null) ?? self::handler_definition($t['guard_class'] ?? null);
            if ($guard_def === null) {
                return $t;
            }
            $name = is_string($t['name'] ?? null) ? $t['name'] : $event_name;
            $target = is_scalar($t['target_state'] ?? '') ? (string) ($t['target_state'] ?? '') : '';
            $input = ['state' => $state, 'event' => $event_name, 'event_payload' => $event_payload, 'payload' => $guard_def['payload']];
            $context = ['from' => $current, 'to' => $target, 'event' => $event_name];
            $started = hrtime(true);
            $guard = self::guard($guard_def['class']);
            $base = ['machine_id' => $id, 'state_name' => $current, 'event_name' => $event_name, 'handler' => $guard_def['class'],
                'transition_name' => $name, 'input' => $input, 'state_before' => $state, 'context' => $context];
            $this->event($base + ['event' => 'guard_started', 'output' => $event_payload, 'state_after' => $state]);
            try {
                $allowed = $guard->allows($state, $event_payload, $event_name, $guard_def['payload']);
            } catch (\Throwable $e) {
                $this->event($base + ['event' => 'guard_failed', 'output' => null, 'state_after' => $state,
                    'error' => self::error_payload($e), 'duration_ms' => intdiv(hrtime(true) - $started, 1_000_000)]);
                throw $e;
            }
            $this->event($base + ['event' => 'guard_completed', 'output' => ['allowed' => $allowed], 'state_after' => $state,
                'duration_ms' => intdiv(hrtime(true) - $started, 1_000_000)]);
            if ($allowed) {
                return $t;
            }
        }
        return null;
    }

    /**
     * The entered state's action job and its action_enqueued row.
     *
     * @param array<string, mixed> $definition
     * @param array<mixed>         $event_payload
     * @param array<string, mixed> $state
     */
    private function enqueue_action(int $id, array $definition, string $state_name, ?string $event_name, array $event_payload, array $state): void
    {
        $state_def = self::as_array(self::as_array($definition['states'] ?? null)[$state_name] ?? null);
        $action = self::action_definition($state_def);
        if ($action === null) {
            return;
        }
        $defaults = HandlerMetadata::from_class($action['class']);
        $queue = is_scalar($definition['queue'] ?? 'default') ? (string) ($definition['queue'] ?? 'default') : 'default';
        $priority = Priority::tryFrom(is_scalar($definition['priority'] ?? 0) ? (int) ($definition['priority'] ?? 0) : 0) ?? Priority::Low;
        $attempts = max(1, is_scalar($definition['max_attempts'] ?? 3) ? (int) ($definition['max_attempts'] ?? 3) : 3);
        $job_id = $this->queue->dispatch(
            handler: '__queuety_state_machine_action',
            payload: ['machine_id' => $id, 'state_name' => $state_name, 'event_name' => $event_name, 'event_payload' => $event_payload],
            queue: $queue,
            priority: $priority,
            max_attempts: $attempts,
            concurrency_group: $defaults['concurrency_group'],
            concurrency_limit: $defaults['concurrency_limit'],
            cost_units: $defaults['cost_units'] ?? 1,
        );
        $out = ['job_id' => $job_id, 'handler' => $action['class'], 'queue' => $queue, 'priority' => $priority->value];
        $this->event([
            'machine_id' => $id, 'job_id' => $job_id, 'state_name' => $state_name, 'handler' => $action['class'],
            'event' => 'action_enqueued', 'event_name' => $event_name, 'queue' => $queue,
            'input' => ['state' => $state, 'event' => $event_name, 'event_payload' => $event_payload, 'payload' => $action['payload']],
            'output' => $out, 'state_before' => $state, 'state_after' => $state,
            'context' => ['state' => $state_name, 'event' => $event_name],
        ]);
    }

    /**
     * @param array<string, mixed>      $state
     * @param array<mixed>|null         $output
     */
    private function lifecycle_event(int $id, string $state_name, string $event, ?string $event_name, array $state, ?array $output): void
    {
        $this->event([
            'machine_id' => $id, 'state_name' => $state_name, 'event' => $event, 'event_name' => $event_name,
            'input' => $output, 'output' => $output, 'state_before' => $state, 'state_after' => $state,
            'context' => ['state' => $state_name, 'event' => $event_name],
        ]);
    }

    /** @param array<string, mixed> $event */
    private function event(array $event): void
    {
        $this->event_log?->record_event($event);
    }

    private static function lifecycle_name(StateMachineStatus $status): string
    {
        return match ($status) {
            StateMachineStatus::WaitingEvent => 'machine_waiting',
            StateMachineStatus::Completed => 'machine_completed',
            StateMachineStatus::Failed => 'machine_failed',
            StateMachineStatus::Cancelled => 'machine_cancelled',
            default => 'machine_' . $status->value,
        };
    }

    /** @param array<string, mixed> $state_def */
    private static function status_for_entered_state(array $state_def): StateMachineStatus
    {
        $terminal = $state_def['terminal_status'] ?? null;
        if (is_string($terminal) && trim($terminal) !== '') {
            return StateMachineStatus::from($terminal);
        }
        return self::action_definition($state_def) !== null ? StateMachineStatus::Running : StateMachineStatus::WaitingEvent;
    }

    /**
     * @param array<string, mixed> $state_def
     * @return array{class: string, payload: array<mixed>}|null
     */
    private static function action_definition(array $state_def): ?array
    {
        return self::handler_definition($state_def['action'] ?? null) ?? self::handler_definition($state_def['action_class'] ?? null);
    }

    /** @return array{class: string, payload: array<mixed>}|null */
    private static function handler_definition(mixed $definition): ?array
    {
        if (is_string($definition) && trim($definition) !== '') {
            return ['class' => trim($definition), 'payload' => []];
        }
        if (!is_array($definition) || !is_string($definition['class'] ?? null) || trim($definition['class']) === '') {
            return null;
        }
        return ['class' => trim($definition['class']), 'payload' => self::as_array($definition['payload'] ?? ($definition['config'] ?? []))];
    }

    private static function guard(string $class): StateGuard
    {
        $class = trim($class);
        if ($class === '' || !class_exists($class)) {
            throw new \RuntimeException("State guard class '{$class}' could not be loaded.");
        }
        $guard = new $class();
        if (!$guard instanceof StateGuard) {
            throw new \RuntimeException("State guard class '{$class}' must implement Queuety\\Contracts\\StateGuard.");
        }
        return $guard;
    }

    /** @return array{message: string, class: string, trace: string} */
    private static function error_payload(\Throwable $e): array
    {
        return ['message' => $e->getMessage(), 'class' => get_class($e), 'trace' => $e->getTraceAsString()];
    }

    private static function dispatch_key(mixed $key): ?string
    {
        if ($key === null) {
            return null;
        }
        if (!is_string($key)) {
            throw new \InvalidArgumentException('State machine idempotency_key must be a string.');
        }
        $key = trim($key);
        if ($key === '') {
            throw new \InvalidArgumentException('State machine idempotency_key cannot be empty.');
        }
        return $key;
    }

    private function machine_for_key(string $key): ?int
    {
        $table = $this->conn->table(Config::table_state_machines());
        $stmt = $this->conn->pdo()->prepare("SELECT id FROM {$table} WHERE idempotency_key = :k LIMIT 1");
        $stmt->execute(['k' => $key]);
        $id = $stmt->fetchColumn();
        return $id === false ? null : (int) $id;
    }

    /** @return array<string, mixed> */
    private static function as_array(mixed $value): array
    {
        if (!is_array($value)) {
            return [];
        }
        $out = [];
        foreach ($value as $k => $v) {
            $out[(string) $k] = $v;
        }
        return $out;
    }
}
