-- What the web dashboard (/ui/) reads. Every statement is bounded: a
-- range of an index, or a LIMIT on the rows it reads, so a page stays
-- cheap on a large jobs or logs table.

-- name: dash-completed-last-hour
-- Jobs completed within the last hour, per queue: a range of
-- idx_status_completed (status, completed_at).
SELECT queue, COUNT(*) AS n FROM {jobs}
WHERE status = 'completed' AND completed_at >= NOW() - INTERVAL 1 HOUR
GROUP BY queue

-- name: dash-buried-scan
-- The newest ? buried rows (idx_status, read backwards) with the error
-- class of each one's newest log row that has one (idx_job), for grouping
-- by class and normalized message in Go.
SELECT b.id, b.handler, COALESCE(b.error_message, '') AS error,
	COALESCE((SELECT l.error_class FROM {logs} l WHERE l.job_id = b.id AND l.error_class IS NOT NULL ORDER BY l.id DESC LIMIT 1), '') AS error_class
FROM (
	SELECT id, handler, error_message FROM {jobs} FORCE INDEX (idx_status)
	WHERE status = 'buried'
	ORDER BY id DESC
	LIMIT ?
) AS b
ORDER BY b.id DESC

-- name: dash-stale-processing
-- Processing jobs not heard from since the cutoff (the stale sweep will
-- hand them back or bury them), oldest first: a range of idx_reserved.
SELECT id, queue, handler, reserved_at, reserved_by, attempts, workflow_id FROM {jobs}
WHERE status = 'processing' AND reserved_at < ?
ORDER BY reserved_at
LIMIT ?

-- name: dash-throughput
-- Attempts that completed and that failed (retried or buried) per minute
-- since the cutoff, from the log rows every worker writes, the plugin's
-- PHP workers included: a range of idx_created. m is minutes since the
-- cutoff.
SELECT TIMESTAMPDIFF(MINUTE, ?, created_at) AS m, event = 'completed' AS ok, COUNT(*) AS n FROM {logs}
WHERE created_at >= ? AND event IN ('completed', 'failed', 'buried')
GROUP BY m, ok

-- name: dash-list-jobs
-- The job list's filters: status, queue, handler ('' = any), created at or
-- after ? (NULL = any), error text (a LIKE pattern, '' = any), one id (0 =
-- any), search text in the handler or payload (a LIKE pattern, '' = any);
-- newest first, a page of ? from offset ?.
SELECT * FROM {jobs}
WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
	AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
	AND (? = 0 OR id = ?) AND (? = '' OR handler LIKE ? OR payload LIKE ?)
ORDER BY id DESC
LIMIT ? OFFSET ?

-- name: dash-count-jobs
-- How many jobs dash-list-jobs's filters match, counting at most ? rows.
SELECT COUNT(*) FROM (
	SELECT id FROM {jobs}
	WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
		AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
		AND (? = 0 OR id = ?) AND (? = '' OR handler LIKE ? OR payload LIKE ?)
	LIMIT ?
) AS matching

-- name: dash-job-ids
-- The ids dash-list-jobs's filters match, at most ?, for a bulk action on
-- "all matching".
SELECT id FROM {jobs}
WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
	AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
	AND (? = 0 OR id = ?) AND (? = '' OR handler LIKE ? OR payload LIKE ?)
ORDER BY id
LIMIT ?

-- name: dash-list-workflows
-- The workflow list's filters: status, name ('' = any), started at or
-- after ? (NULL = any), error text (a LIKE pattern, '' = any); newest
-- first, a page of ? from offset ?.
SELECT * FROM {workflows}
WHERE (? = '' OR status = ?) AND (? = '' OR name = ?)
	AND (? IS NULL OR started_at >= ?) AND (? = '' OR error_message LIKE ?)
ORDER BY id DESC
LIMIT ? OFFSET ?

-- name: dash-count-workflows
SELECT COUNT(*) FROM (
	SELECT id FROM {workflows}
	WHERE (? = '' OR status = ?) AND (? = '' OR name = ?)
		AND (? IS NULL OR started_at >= ?) AND (? = '' OR error_message LIKE ?)
	LIMIT ?
) AS matching

-- name: dash-workflow-ids
SELECT id FROM {workflows}
WHERE (? = '' OR status = ?) AND (? = '' OR name = ?)
	AND (? IS NULL OR started_at >= ?) AND (? = '' OR error_message LIKE ?)
ORDER BY id
LIMIT ?

-- name: dash-pending-session-jobs
-- Pending session-bound jobs, at most ?: idx_qgo_session over the virtual
-- session_pending column (NULL for every other row).
SELECT id, queue, handler, session_id, worker_session FROM {jobs}
WHERE session_pending IS NOT NULL
ORDER BY session_pending, id
LIMIT ?

-- name: dash-list-batches
-- The newest batches first (primary key, read backwards), at most ?.
SELECT * FROM {batches} ORDER BY id DESC LIMIT ?

-- name: dash-batch-jobs
-- The jobs of one batch, at most ?: a range of idx_batch.
SELECT * FROM {jobs} WHERE batch_id = ? ORDER BY id LIMIT ?

-- name: dash-schedule-get
SELECT id, handler, payload, queue, expression, expression_type, last_run, next_run,
	overlap_policy, enabled, created_at
FROM {schedules} WHERE id = ?

-- name: dash-schedule-set-enabled
-- Pause (0) or resume (1) a schedule: the tick only takes enabled rows,
-- the plugin's and ours.
UPDATE {schedules} SET enabled = ? WHERE id = ?

-- name: dash-schedule-run-now
-- "Run now": the schedule becomes due, so the next tick (any daemon's or
-- PHP worker's, under its overlap policy and row lock) dispatches it once
-- and moves next_run on; an enabled row only.
UPDATE {schedules} SET next_run = ? WHERE id = ? AND enabled = 1
