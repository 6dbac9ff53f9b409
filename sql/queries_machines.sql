-- State machines (StateMachine, StateMachineEventLog): the rows an action
-- job, an event or a failed action writes, under the machine's row lock.

-- name: lock-machine
-- StateMachine::lock_machine: the row stays locked while the action or the
-- guards run, so two deliveries of one machine never interleave.
SELECT id, name, status, current_state, state, definition, definition_hash, definition_version,
	idempotency_key, started_at, updated_at, completed_at, failed_at, error_message
FROM {state_machines} WHERE id = ? FOR UPDATE

-- name: get-machine
SELECT id, name, status, current_state, state, definition, definition_hash, definition_version,
	idempotency_key, started_at, updated_at, completed_at, failed_at, error_message
FROM {state_machines} WHERE id = ?

-- name: list-machines
-- StateMachine::list: newest first, optionally one status ('' for all).
SELECT id, name, status, current_state, state, definition, definition_hash, definition_version,
	idempotency_key, started_at, updated_at, completed_at, failed_at, error_message
FROM {state_machines} WHERE (? = '' OR status = ?) ORDER BY id DESC LIMIT ?

-- name: update-machine
-- update_machine_row as a transition, a wait or an action leaves it.
UPDATE {state_machines}
SET status = ?, current_state = ?, state = ?, completed_at = ?, failed_at = ?, error_message = ?
WHERE id = ?

-- name: fail-machine
-- update_machine_row as fail_action leaves it (completed_at untouched).
UPDATE {state_machines}
SET status = 'failed', current_state = ?, state = ?, failed_at = ?, error_message = ?
WHERE id = ?

-- name: insert-machine-event
INSERT INTO {state_machine_events}
	(machine_id, job_id, state_name, handler, event, event_name, transition_name, queue, attempt,
	 input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: machine-events
-- StateMachineEventLog::get_timeline.
SELECT id, machine_id, job_id, state_name, handler, event, event_name, transition_name, queue,
	attempt, input, output, state_before, state_after, context, artifacts, chunks, error,
	duration_ms, created_at
FROM {state_machine_events} WHERE machine_id = ? ORDER BY id ASC LIMIT ?

-- name: insert-machine-action-job
-- enqueue_state_action's Queue::dispatch: no payload hash, no dependency.
INSERT INTO {jobs}
	(queue, handler, payload, priority, status, max_attempts, available_at,
	 concurrency_group, concurrency_limit, cost_units)
VALUES (?, '__queuety_state_machine_action', ?, ?, 'pending', ?, ?, ?, ?, ?)

-- name: machine-savepoint
-- Marks a point a guard's call can be undone to (see MachineTx.Savepoint).
SAVEPOINT queuety_guard

-- name: machine-rollback-savepoint
ROLLBACK TO SAVEPOINT queuety_guard

-- name: insert-machine
-- StateMachine::dispatch_definition's row.
INSERT INTO {state_machines}
	(name, status, current_state, state, definition, definition_hash, definition_version, idempotency_key,
	 completed_at, failed_at, error_message)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)

-- name: find-machine-by-key
SELECT id FROM {state_machines} WHERE idempotency_key = ? LIMIT 1
