-- Operating on jobs by hand (`queuety job`, the dashboard, the HTTP API):
-- list, inspect, retry, bury, delete, purge; and the benchmarks' resets.
-- Constants in queries_admin.go.

-- name: list-jobs
SELECT * FROM {jobs}
WHERE (? = '' OR queue = ?) AND (? = '' OR status = ?) AND (? = '' OR handler = ?)
ORDER BY id DESC
LIMIT ?

-- name: get-job
SELECT * FROM {jobs} WHERE id = ?

-- name: job-logs
SELECT * FROM {logs} WHERE job_id = ? ORDER BY id

-- name: retry-job-by-hand
-- Queue::retry(id, 0), as `job retry` and Queuety::retry do: from any status,
-- attempts kept.
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id = ?

-- name: buried-ids
SELECT id FROM {jobs} WHERE status = 'buried' AND (? = '' OR queue = ?) ORDER BY id

-- name: retry-buried
UPDATE {jobs}
SET status = 'pending', reserved_at = NULL, reserved_by = NULL, available_at = ?, error_message = NULL
WHERE id IN (?) AND status = 'buried'

-- name: bury-job-by-hand
UPDATE {jobs} SET status = 'buried', failed_at = NOW(), error_message = ?, reserved_by = NULL WHERE id = ?

-- name: delete-job
DELETE FROM {jobs} WHERE id = ?

-- name: count-buried
-- What retry-buried would touch, for its confirmation.
SELECT COUNT(*) FROM {jobs} WHERE status = 'buried' AND (? = '' OR queue = ?)

-- name: count-purgeable
-- What purge-completed would delete, for purge's confirmation.
SELECT COUNT(*) FROM {jobs} WHERE status = 'completed' AND completed_at < ?

-- name: purge-completed
-- In slices, so a large purge never holds a long lock on the hot table.
DELETE FROM {jobs} WHERE status = 'completed' AND completed_at < ? LIMIT 5000

-- name: truncate-jobs
-- Benchmarks only: start from empty tables.
TRUNCATE TABLE {jobs}

-- name: truncate-logs
TRUNCATE TABLE {logs}

-- name: count-log-events
SELECT COUNT(*) FROM {logs} WHERE event = ?
