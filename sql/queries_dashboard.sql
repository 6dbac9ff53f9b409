-- What the web dashboard (/ui/) reads. Every statement is bounded: a
-- range of an index, or a LIMIT on the rows it reads, so a page stays
-- cheap on a large jobs or logs table.

-- name: dash-completed-last-hour
-- Jobs completed within the last hour, per queue: a range of
-- idx_status_completed (status, completed_at).
SELECT queue, COUNT(*) AS n FROM {jobs}
WHERE status = 'completed' AND completed_at >= NOW() - INTERVAL 1 HOUR
GROUP BY queue

-- name: dash-buried-groups
-- Buried jobs grouped by handler and error, largest group first, among
-- the newest ? buried rows (idx_status, read backwards); at most ? groups.
SELECT handler, COALESCE(error_message, '') AS error, COUNT(*) AS n, MAX(id) AS last_id
FROM (
	SELECT id, handler, error_message FROM {jobs} FORCE INDEX (idx_status)
	WHERE status = 'buried'
	ORDER BY id DESC
	LIMIT ?
) AS buried
GROUP BY handler, COALESCE(error_message, '')
ORDER BY n DESC, last_id DESC
LIMIT ?

-- name: dash-buried-group-ids
-- The buried jobs of one group (handler, error text; '' = no error), at
-- most ?: a range of idx_handler_status (handler, status).
SELECT id FROM {jobs}
WHERE handler = ? AND status = 'buried' AND COALESCE(error_message, '') = ?
ORDER BY id
LIMIT ?

-- name: dash-stale-processing
-- Processing jobs not heard from since the cutoff (the stale sweep will
-- hand them back or bury them), oldest first: a range of idx_reserved.
SELECT id, queue, handler, reserved_at, reserved_by, attempts, workflow_id FROM {jobs}
WHERE status = 'processing' AND reserved_at < ?
ORDER BY reserved_at
LIMIT ?

-- name: dash-throughput
-- Jobs completed per minute since the cutoff, from the log rows the
-- workers write: a range of idx_created. m is minutes since the cutoff.
SELECT TIMESTAMPDIFF(MINUTE, ?, created_at) AS m, COUNT(*) AS n FROM {logs}
WHERE created_at >= ? AND event = 'completed'
GROUP BY m

-- name: dash-list-jobs
-- The job list's filters: status, queue, handler ('' = any), created at or
-- after ? (NULL = any), error text (a LIKE pattern, '' = any); newest
-- first, a page of ? from offset ?.
SELECT * FROM {jobs}
WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
	AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
ORDER BY id DESC
LIMIT ? OFFSET ?

-- name: dash-count-jobs
-- How many jobs dash-list-jobs's filters match, counting at most ? rows.
SELECT COUNT(*) FROM (
	SELECT id FROM {jobs}
	WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
		AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
	LIMIT ?
) AS matching

-- name: dash-job-ids
-- The ids dash-list-jobs's filters match, at most ?, for a bulk action on
-- "all matching".
SELECT id FROM {jobs}
WHERE (? = '' OR status = ?) AND (? = '' OR queue = ?) AND (? = '' OR handler = ?)
	AND (? IS NULL OR created_at >= ?) AND (? = '' OR error_message LIKE ?)
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
