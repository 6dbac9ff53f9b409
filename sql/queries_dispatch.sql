-- Dispatch: Queue::dispatch and Queue::batch, the unique check, and how the
-- server numbers a multi-row INSERT. Constants in queries_dispatch.go.

-- name: find-unique-job
-- Queuety's unique check (Queue::dispatch): same handler and payload bytes,
-- still pending or processing. Not atomic in PHP either.
SELECT id FROM {jobs}
WHERE handler = ? AND payload_hash = ? AND status IN ('pending', 'processing')
LIMIT 1

-- name: insert-job
INSERT INTO {jobs}
	(queue, handler, payload, payload_hash, priority, status, max_attempts, available_at,
	 workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units,
	 session_id, worker_session)
VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: autoinc-settings
-- How the server numbers the rows of one multi-row INSERT (see
-- Store.consecutiveIDs).
SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS step

-- name: insert-jobs-bulk
-- Queue::batch: one multi-row INSERT of the columns it sets; values tuples
-- (7 columns each) are appended by the store.
INSERT INTO {jobs} (queue, handler, payload, priority, status, max_attempts, available_at) VALUES
