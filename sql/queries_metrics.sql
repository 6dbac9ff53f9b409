-- What GET /metrics reads at scrape time (internal/metrics caches it for a
-- couple of seconds). Every statement groups on indexed columns, so each
-- reads an index, never the rows: jobs through idx_queue_status_available,
-- workflows through idx_status, activity executions through idx_status.

-- name: metrics-jobs
-- Jobs by queue and status: a covering scan of idx_queue_status_available.
SELECT queue, status, COUNT(*) AS n FROM {jobs} GROUP BY queue, status

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
