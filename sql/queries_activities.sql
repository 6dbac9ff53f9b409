-- Local activities (workflow/local_activity*.go): the execution and attempt
-- records, the workflow task (step job) a local attempt runs under, and
-- the operator metrics. Constants in queries_activities.go.

-- name: insert-claimed-step-job
-- A local activity's step job, written already claimed by the worker that
-- advanced the workflow (processing, attempts 1, reserved_by, reserved_at):
-- the worker runs it right after the commit, with no claim round trip.
INSERT INTO {jobs}
	(queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, available_at,
	 reserved_at, reserved_by, workflow_id, step_index, cost_units)
VALUES (?, ?, ?, NULL, ?, 'processing', 1, ?, NOW(), NOW(), ?, ?, ?, ?)

-- name: claimed-step-jobs
-- The ids of the chained step jobs a batch inserted already claimed (see
-- InsertChainedStepJob): the newest processing job of each workflow and
-- step the worker holds. /*steps*/ is "(workflow_id = ? AND step_index = ?)"
-- per job, ORed: ranges of idx_workflow, so a workflow's other jobs (a
-- large for_each's) are not read.
SELECT MAX(id) AS id, workflow_id, step_index FROM {jobs}
WHERE (/*steps*/) AND status = 'processing' AND reserved_by = ?
GROUP BY workflow_id, step_index

-- name: renew-job-lease
-- Renews the workflow task lease a local attempt runs under; fenced on the
-- holder and the claim (attempts), like a job heartbeat.
UPDATE {jobs} SET reserved_at = NOW()
WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: renew-job-lease-progress
UPDATE {jobs} SET reserved_at = NOW(), heartbeat_data = ?
WHERE id = ? AND status = 'processing' AND reserved_by = ? AND attempts = ?

-- name: get-activity-execution-by-job
SELECT * FROM {activity_executions} WHERE job_id = ?

-- name: start-activity-execution
-- An attempt starts: running, one more attempt, its deadlines.
UPDATE {activity_executions}
SET status = 'running', attempt_count = attempt_count + 1, current_attempt_id = ?,
	started_at = COALESCE(started_at, ?), close_deadline_at = ?, heartbeat_deadline_at = ?,
	last_heartbeat_at = NULL, history = ?, updated_at = ?
WHERE id = ?

-- name: insert-activity-attempt
INSERT INTO {activity_attempts}
	(id, execution_id, workflow_id, job_id, attempt_number, status, lease_owner, retry_reason, started_at,
	 lease_expires_at)
VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)

-- name: close-activity-attempt
-- Closes a running attempt: completed, failed, expired or cancelled.
UPDATE {activity_attempts}
SET status = ?, error_message = ?, error_class = ?, timeout_kind = ?, closed_at = ?
WHERE id = ? AND status = 'running'

-- name: close-activity-execution
-- A terminal failure, timeout or cancellation.
UPDATE {activity_executions}
SET status = ?, last_error = ?, last_error_class = ?, timeout_kind = ?, history = ?, closed_at = ?, updated_at = ?
WHERE id = ?

-- name: retry-activity-execution
-- A retry is scheduled: pending again, deadlines of the attempt cleared;
-- retry_reason is handed to the next attempt.
UPDATE {activity_executions}
SET status = 'pending', last_error = ?, last_error_class = ?, retry_reason = ?, timeout_kind = ?,
	close_deadline_at = NULL, heartbeat_deadline_at = NULL, last_heartbeat_at = NULL, history = ?, updated_at = ?
WHERE id = ?

-- name: heartbeat-activity-execution
UPDATE {activity_executions}
SET last_heartbeat_at = ?, heartbeat_deadline_at = ?, history = ?, updated_at = ?
WHERE id = ?

-- name: heartbeat-activity-attempt
UPDATE {activity_attempts}
SET last_heartbeat_at = ?, lease_expires_at = ?, progress = ?
WHERE id = ? AND status = 'running'

-- name: activity-executions-of-workflow
SELECT * FROM {activity_executions} WHERE workflow_id = ? ORDER BY id

-- name: activity-attempts-of-workflow
SELECT * FROM {activity_attempts} WHERE workflow_id = ? ORDER BY execution_id, attempt_number

-- name: activity-execution-metrics
-- Operator metrics of local executions (one row). An execution is open
-- while it is pending or running and its step job is still live (pending
-- or processing): a workflow cancelled while a retry waited buried the job.
SELECT COUNT(*) AS local_total,
	COALESCE(SUM(e.status IN ('pending', 'running') AND j.status IN ('pending', 'processing')), 0) AS local_open,
	COALESCE(SUM(e.status = 'pending' AND j.status IN ('pending', 'processing')), 0) AS local_pending,
	COALESCE(SUM(e.status = 'running' AND j.status IN ('pending', 'processing')), 0) AS local_running,
	COALESCE(SUM(e.status = 'completed'), 0) AS local_completed,
	COALESCE(SUM(e.status = 'failed'), 0) AS local_failed,
	COALESCE(SUM(e.status = 'cancelled'), 0) AS local_cancelled
FROM {activity_executions} e LEFT JOIN {jobs} j ON j.id = e.job_id
WHERE e.execution_mode = 'local'

-- name: activity-attempt-metrics
SELECT COUNT(*) AS local_attempts,
	COALESCE(SUM(a.status IN ('failed', 'expired')), 0) AS local_failed_attempts
FROM {activity_attempts} a JOIN {activity_executions} e ON e.id = a.execution_id
WHERE e.execution_mode = 'local'

-- name: queued-step-job-metrics
-- Queued workflow activities: step jobs (workflow_id set) that are not
-- local activity jobs (no execution row) and are not __queuety_*
-- placeholders (orchestration, not activity work). Open = pending or
-- processing; failed attempts = their `failed` log rows.
SELECT COALESCE(SUM(j.status = 'pending'), 0) AS queued_pending,
	COALESCE(SUM(j.status = 'processing'), 0) AS queued_running
FROM {jobs} j LEFT JOIN {activity_executions} e ON e.job_id = j.id
WHERE j.workflow_id IS NOT NULL AND e.id IS NULL AND j.handler NOT LIKE '\_\_queuety\_%'
	AND j.status IN ('pending', 'processing')

-- name: queued-step-failed-attempts
SELECT COUNT(*) FROM {logs} l LEFT JOIN {activity_executions} e ON e.job_id = l.job_id
WHERE l.event = 'failed' AND l.workflow_id IS NOT NULL AND e.id IS NULL
	AND l.handler NOT LIKE '\_\_queuety\_%'

-- name: plain-job-metrics
-- Plain jobs (no workflow): the other queued work an operator sees.
SELECT COALESCE(SUM(status = 'pending'), 0) AS jobs_pending,
	COALESCE(SUM(status = 'processing'), 0) AS jobs_running
FROM {jobs} WHERE workflow_id IS NULL AND status IN ('pending', 'processing')

-- name: truncate-activity-executions
-- Benchmarks only: empty the local activity tables.
TRUNCATE TABLE {activity_executions}

-- name: truncate-activity-attempts
TRUNCATE TABLE {activity_attempts}

-- name: lock-job-with-execution
-- The step job of a local activity and its execution, both locked, in one
-- round trip (the execution columns prefixed x_; NULL when none yet).
SELECT j.*, e.id AS x_id, e.status AS x_status, e.attempt_count AS x_attempt_count,
	e.current_attempt_id AS x_current_attempt_id, e.history AS x_history, e.retry_reason AS x_retry_reason,
	e.result AS x_result, e.last_error AS x_last_error,
	e.schedule_to_close_deadline_at AS x_schedule_to_close_deadline_at, e.close_deadline_at AS x_close_deadline_at,
	e.heartbeat_deadline_at AS x_heartbeat_deadline_at, e.last_heartbeat_at AS x_last_heartbeat_at
FROM {jobs} j LEFT JOIN {activity_executions} e ON e.job_id = j.id
WHERE j.id = ? FOR UPDATE

-- name: insert-running-activity-execution
-- First encounter and first attempt at once: the execution is created
-- running with attempt 1.
INSERT INTO {activity_executions}
	(workflow_id, step_index, job_id, activity_type, execution_mode, queue_bypassed, status, attempt_count,
	 current_attempt_id, activity_options, retry_policy, history, schedule_to_close_deadline_at,
	 close_deadline_at, heartbeat_deadline_at, started_at, created_at, updated_at)
VALUES (?, ?, ?, ?, 'local', 1, 'running', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: complete-activity-attempt-and-execution
-- The attempt and its execution complete together.
UPDATE {activity_executions} e JOIN {activity_attempts} a ON a.id = e.current_attempt_id
SET e.status = 'completed', e.result = ?, e.history = ?, e.closed_at = ?, e.updated_at = ?,
	a.status = 'completed', a.closed_at = ?
WHERE e.id = ? AND a.status = 'running'

-- name: complete-local-step
-- The hot path of a local attempt that succeeded: its step job, execution
-- and attempt complete in one statement, fenced on the claim (status,
-- reserved_by, attempts) and on the attempt being the execution's running
-- one. Every table is matched by its primary key, so the server reads the
-- three rows as constants: when one fence fails nothing is matched and
-- nothing changes (0 rows), else the three rows change (3). One round trip
-- instead of three, which is what a step's latency is made of on a busy
-- server. A multi-table UPDATE writes the first table of its join in place
-- and copies the new values of the others into temporary tables; with the
-- execution (its LONGTEXT result and history) anywhere but first, that
-- temporary table goes to disk, and the statement cost the server twice
-- the CPU of a chained step's job update. STRAIGHT_JOIN keeps it first.
UPDATE {activity_executions} e STRAIGHT_JOIN {jobs} j STRAIGHT_JOIN {activity_attempts} a
SET j.status = 'completed', j.completed_at = NOW(),
	e.status = 'completed', e.result = ?, e.history = ?, e.closed_at = ?, e.updated_at = ?,
	a.status = 'completed', a.closed_at = ?
WHERE j.id = ? AND j.status = 'processing' AND j.reserved_by = ? AND j.attempts = ?
	AND e.id = ? AND e.status = 'running' AND e.current_attempt_id = ?
	AND a.id = ? AND a.status = 'running'

-- name: advance-assumed-workflow
-- advance-workflow of a row the transaction did not lock first
-- (WorkflowTx.AssumeWorkflow): fenced on the status, step and state its
-- writer last committed, the state by its SHA-256 (the bytes as stored):
-- sending the state a second time to compare it byte for byte made this
-- the second dearest statement of a local step.
UPDATE {workflows} SET state = ?, current_step = ?
WHERE id = ? AND status = ? AND current_step = ? AND SHA2(state, 256) = ?

-- name: complete-assumed-workflow
-- complete-workflow of an assumed row, fenced as advance-assumed-workflow.
UPDATE {workflows}
SET state = ?, current_step = ?, status = 'completed', completed_at = NOW()
WHERE id = ? AND status = ? AND current_step = ? AND SHA2(state, 256) = ?
