-- name: fleet-set-claims
-- A registered worker says what it claims (workers.claims).
UPDATE {workers} SET claims = ? WHERE namespace = ? AND worker_id = ?

-- name: fleet-live-workers
-- The registrations heartbeated since the cutoff, with what they claim.
SELECT worker_id, queues, claims FROM {workers}
WHERE status = 'active' AND last_heartbeat_at >= ?

-- name: fleet-pending
-- What is waiting on every queue, by queue, handler and kind (plain job,
-- workflow step, batch job), for the status report of jobs no live worker
-- runs. The inner LIMIT bounds the read on a large backlog.
SELECT queue, handler, is_step, is_batch, COUNT(*) AS n FROM (
	SELECT queue, handler, workflow_id IS NOT NULL AS is_step, batch_id IS NOT NULL AS is_batch
	FROM {jobs} FORCE INDEX (idx_status)
	WHERE status = 'pending' AND session_id IS NULL
	LIMIT 50000
) AS pending
GROUP BY queue, handler, is_step, is_batch
ORDER BY n DESC
LIMIT 200

-- name: fleet-php-seen
-- Queues where a PHP worker claimed a job lately: the plugin's claim sets
-- reserved_at but knows nothing of reserved_by, which our claims always
-- set and our completions keep. Rows being run now, and rows completed
-- since the cutoff, each read bounded.
SELECT queue FROM (
	(SELECT queue FROM {jobs} FORCE INDEX (idx_reserved)
		WHERE status = 'processing' AND reserved_by IS NULL AND reserved_at IS NOT NULL LIMIT 5000)
	UNION ALL
	(SELECT queue FROM {jobs} FORCE INDEX (idx_status_completed)
		WHERE status = 'completed' AND completed_at >= ? AND reserved_by IS NULL AND reserved_at IS NOT NULL LIMIT 5000)
) AS php
GROUP BY queue
