-- What GET /metrics reads at scrape time (internal/metrics caches it for a
-- couple of seconds). Each statement reads an index, never the rows of a
-- whole table: completed jobs, the bulk of a large jobs table, are only
-- counted through idx_status (the one full scan, of the smallest index);
-- per queue, only the statuses of work not done yet, whose rows are few.

-- name: metrics-jobs
-- Open jobs by queue and status: a range of idx_status (pending,
-- processing, failed, buried), then the queue of each of those rows.
SELECT queue, status, COUNT(*) AS n FROM {jobs}
WHERE status IN ('pending', 'processing', 'failed', 'buried')
GROUP BY queue, status

-- name: metrics-jobs-completed
-- Completed jobs of every queue: the completed range of idx_status.
SELECT COUNT(*) FROM {jobs} WHERE status = 'completed'

-- name: metrics-oldest-pending
-- Per queue, how long the oldest runnable pending job has waited (jobs
-- scheduled for later are not waiting yet). MIN(available_at) per queue
-- under status = 'pending' is a loose scan of idx_queue_status_available.
SELECT queue, GREATEST(0, TIMESTAMPDIFF(SECOND, MIN(available_at), NOW())) AS age
FROM {jobs}
WHERE status = 'pending' AND available_at <= NOW()
GROUP BY queue

-- name: metrics-workflows
SELECT status, COUNT(*) AS n FROM {workflows} GROUP BY status

-- name: metrics-worker-sessions
-- Every namespace's sessions by status (a small table).
SELECT status, COUNT(*) AS n FROM {worker_sessions} GROUP BY status

-- name: metrics-activities
SELECT execution_mode AS mode, status, COUNT(*) AS n FROM {activity_executions} GROUP BY execution_mode, status
