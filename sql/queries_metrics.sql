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

-- name: metrics-oldest-runnable
-- How long the oldest pending job of one queue that can run now has
-- waited: due, its dependency completed, and (a workflow step) its
-- workflow running or paused, as claim-jobs asks. Rows that can never run
-- (a step of a failed workflow) or wait on something else must not make a
-- latency alert fire for ever, so the age is that of the first runnable
-- row in available_at order: a range of idx_queue_status_available that
-- stops at it (one primary key lookup per row skipped). NULL: none.
SELECT GREATEST(0, TIMESTAMPDIFF(SECOND, job.available_at, NOW())) AS age
FROM {jobs} AS job FORCE INDEX (idx_queue_status_available)
WHERE job.queue = ? AND job.status = 'pending' AND job.available_at <= NOW()
	AND (job.depends_on IS NULL
		OR (SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on) = 'completed')
	AND (job.workflow_id IS NULL
		OR (SELECT wf.status FROM {workflows} wf WHERE wf.id = job.workflow_id) IN ('running', 'paused'))
ORDER BY job.available_at ASC
LIMIT 1

-- name: metrics-jobs-waiting
-- Due pending jobs that cannot run yet, by queue and what they wait on:
-- an unfinished dependency, or a workflow that is not running (a step of a
-- failed or cancelled workflow waits for ever). Only rows with a
-- dependency or a workflow are candidates, at most 50,000 read.
SELECT queue, reason, COUNT(*) AS n FROM (
	SELECT job.queue,
		IF(job.depends_on IS NOT NULL
			AND COALESCE((SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on), '') != 'completed',
			'dependency', 'workflow') AS reason
	FROM {jobs} AS job FORCE INDEX (idx_status)
	WHERE job.status = 'pending' AND job.available_at <= NOW()
		AND (job.depends_on IS NOT NULL OR job.workflow_id IS NOT NULL)
		AND ((job.depends_on IS NOT NULL
				AND COALESCE((SELECT dep.status FROM {jobs} dep WHERE dep.id = job.depends_on), '') != 'completed')
			OR (job.workflow_id IS NOT NULL
				AND COALESCE((SELECT wf.status FROM {workflows} wf WHERE wf.id = job.workflow_id), '') NOT IN ('running', 'paused')))
	LIMIT 50000
) AS waiting
GROUP BY queue, reason

-- name: metrics-live-workers
-- Registrations heartbeated since the cutoff, with their queues: "go" for
-- queuety-go workers, anything else registered through the worker API is
-- external (the runtime label stays one of two values). A small table.
SELECT IF(runtime = 'go', 'go', 'external') AS runtime, queues FROM {workers}
WHERE status = 'active' AND last_heartbeat_at >= ?

-- name: metrics-log-head
-- The newest log row's id: where counting completions starts.
SELECT COALESCE(MAX(id), 0) FROM {logs}

-- name: metrics-log-completions
-- Completed log rows after one id up to another, by queue: every worker
-- writes one per completed job (the plugin's PHP workers as the daemon),
-- so counting them as they arrive gives fleet throughput that a retention
-- sweep cannot lower. A range of idx_event (event, id).
SELECT queue, COUNT(*) AS n FROM {logs}
WHERE event = 'completed' AND id > ? AND id <= ?
GROUP BY queue

-- name: metrics-workflows
SELECT status, COUNT(*) AS n FROM {workflows} GROUP BY status

-- name: metrics-worker-sessions
-- Every namespace's sessions by status (a small table).
SELECT status, COUNT(*) AS n FROM {worker_sessions} GROUP BY status

-- name: metrics-activities
SELECT execution_mode AS mode, status, COUNT(*) AS n FROM {activity_executions} GROUP BY execution_mode, status
