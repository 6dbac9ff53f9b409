-- Worker registrations and worker-session leases (package internal/sessions,
-- spec sessions-local-activities.md §1–2). Every session change runs under
-- lock-worker-session in one transaction. Constants in queries_sessions.go.

-- name: upsert-worker
-- POST /api/worker/register is an upsert keyed by (namespace, worker_id):
-- the heartbeat is now and the status active again; registered_at keeps the
-- first registration.
INSERT INTO {workers} (namespace, worker_id, task_queue, queues, runtime, sdk_version, build_id,
	capabilities, max_concurrent_worker_sessions, status, heartbeat_interval_seconds, task_slots,
	process_metrics, last_heartbeat_at, registered_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
	task_queue = VALUES(task_queue), queues = VALUES(queues), runtime = VALUES(runtime),
	sdk_version = VALUES(sdk_version), build_id = VALUES(build_id),
	capabilities = VALUES(capabilities),
	max_concurrent_worker_sessions = VALUES(max_concurrent_worker_sessions), status = 'active',
	heartbeat_interval_seconds = VALUES(heartbeat_interval_seconds),
	task_slots = VALUES(task_slots), process_metrics = VALUES(process_metrics),
	last_heartbeat_at = VALUES(last_heartbeat_at), updated_at = VALUES(updated_at)

-- name: get-worker
SELECT namespace, worker_id, task_queue, queues, runtime, sdk_version, build_id, capabilities,
	max_concurrent_worker_sessions, status, heartbeat_interval_seconds, task_slots,
	process_metrics, last_heartbeat_at, registered_at, updated_at
FROM {workers} WHERE namespace = ? AND worker_id = ?

-- name: lock-worker
-- Serialises a worker's session creations and reacquisitions, so two of its
-- transactions cannot both pass the worker limit.
SELECT namespace, worker_id, task_queue, queues, runtime, sdk_version, build_id, capabilities,
	max_concurrent_worker_sessions, status, heartbeat_interval_seconds, task_slots,
	process_metrics, last_heartbeat_at, registered_at, updated_at
FROM {workers} WHERE namespace = ? AND worker_id = ?
FOR UPDATE

-- name: list-workers
SELECT namespace, worker_id, task_queue, queues, runtime, sdk_version, build_id, capabilities,
	max_concurrent_worker_sessions, status, heartbeat_interval_seconds, task_slots,
	process_metrics, last_heartbeat_at, registered_at, updated_at
FROM {workers} WHERE namespace = ?
ORDER BY worker_id ASC

-- name: heartbeat-worker
-- POST /api/worker/heartbeat: only what the worker sent replaces what is stored.
UPDATE {workers} SET last_heartbeat_at = ?, updated_at = ?,
	task_slots = COALESCE(?, task_slots), process_metrics = COALESCE(?, process_metrics)
WHERE namespace = ? AND worker_id = ?

-- name: delete-worker
-- Graceful deregistration: the sessions it held turn orphaned on their next refresh.
DELETE FROM {workers} WHERE namespace = ? AND worker_id = ?

-- name: lock-worker-session
-- Every lifecycle operation starts here (acquireLocked, heartbeat, close, refresh).
SELECT id, namespace, session_id, connection, queue, requirements, status, lease_owner,
	lease_expires_at, ttl_expires_at, closed_at, failure_reason, lease_seconds, ttl_seconds,
	max_concurrent_activities, create_if_missing, allow_reacquire_after_failure,
	last_heartbeat_at, created_at, updated_at
FROM {worker_sessions} WHERE namespace = ? AND session_id = ?
FOR UPDATE

-- name: list-worker-sessions
-- The operator list: newest change first, then by id.
SELECT id, namespace, session_id, connection, queue, requirements, status, lease_owner,
	lease_expires_at, ttl_expires_at, closed_at, failure_reason, lease_seconds, ttl_seconds,
	max_concurrent_activities, create_if_missing, allow_reacquire_after_failure,
	last_heartbeat_at, created_at, updated_at
FROM {worker_sessions} WHERE namespace = ?
ORDER BY updated_at DESC, session_id ASC

-- name: insert-worker-session
INSERT INTO {worker_sessions} (namespace, session_id, connection, queue, requirements, status,
	lease_owner, lease_expires_at, ttl_expires_at, closed_at, failure_reason, lease_seconds,
	ttl_seconds, max_concurrent_activities, create_if_missing, allow_reacquire_after_failure,
	last_heartbeat_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: update-worker-session
-- Writes back a row read by lock-worker-session (identity and created_at never change).
UPDATE {worker_sessions} SET connection = ?, queue = ?, requirements = ?, status = ?,
	lease_owner = ?, lease_expires_at = ?, ttl_expires_at = ?, closed_at = ?, failure_reason = ?,
	lease_seconds = ?, ttl_seconds = ?, max_concurrent_activities = ?, create_if_missing = ?,
	allow_reacquire_after_failure = ?, last_heartbeat_at = ?, updated_at = ?
WHERE id = ?

-- name: count-worker-leased-sessions
-- The worker limit (§1.6 step 8): this worker's active sessions whose lease
-- has not lapsed, except the one being reacquired.
SELECT COUNT(*) FROM {worker_sessions}
WHERE namespace = ? AND lease_owner = ? AND status = 'active'
	AND (lease_expires_at IS NULL OR lease_expires_at > ?) AND session_id <> ?

-- name: count-session-activities
-- active_activity_count: a job row is the attempt and its lease, so the
-- session's running attempts are its processing jobs reserved by the
-- holder, except the job being admitted. session_processing is session_id
-- while processing, so idx_qgo_session_processing reads only this
-- session's running jobs.
SELECT COUNT(*) FROM {jobs}
WHERE session_processing = ? AND reserved_by = ? AND id <> ?

-- name: active-worker-session-ids
-- What a list, detail or metrics read refreshes first.
SELECT session_id FROM {worker_sessions} WHERE namespace = ? AND status = 'active'
ORDER BY id ASC

-- name: held-worker-session-ids
-- Planned shutdown: every session the worker still holds.
SELECT session_id FROM {worker_sessions}
WHERE namespace = ? AND lease_owner = ? AND status <> 'closed'
ORDER BY id ASC

-- name: worker-session-metrics
SELECT status, COUNT(*) AS n FROM {worker_sessions} WHERE namespace = ? GROUP BY status
