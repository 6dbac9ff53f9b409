-- The log queries of `queuety log` and `queuety metrics`, as the plugin's
-- Logger (for_job, for_workflow, for_handler, for_event, since) and
-- Metrics::handler_stats run them.

-- name: logs-by-job
-- Logger::for_job: oldest first. Each query is one of the plugin's, then
-- the other filters of `queuety log`: a NULL argument leaves its filter
-- out (the first condition is already an index range; these narrow it).
SELECT * FROM {logs} WHERE job_id = ?
	AND (? IS NULL OR job_id = ?) AND (? IS NULL OR workflow_id = ?)
	AND (? IS NULL OR handler = ?) AND (? IS NULL OR event = ?) AND (? IS NULL OR created_at >= ?)
ORDER BY id ASC LIMIT ?

-- name: logs-by-workflow
SELECT * FROM {logs} WHERE workflow_id = ?
	AND (? IS NULL OR job_id = ?) AND (? IS NULL OR workflow_id = ?)
	AND (? IS NULL OR handler = ?) AND (? IS NULL OR event = ?) AND (? IS NULL OR created_at >= ?)
ORDER BY id ASC LIMIT ?

-- name: logs-by-handler
-- Logger::for_handler: newest first.
SELECT * FROM {logs} WHERE handler = ?
	AND (? IS NULL OR job_id = ?) AND (? IS NULL OR workflow_id = ?)
	AND (? IS NULL OR handler = ?) AND (? IS NULL OR event = ?) AND (? IS NULL OR created_at >= ?)
ORDER BY id DESC LIMIT ?

-- name: logs-by-event
SELECT * FROM {logs} WHERE event = ?
	AND (? IS NULL OR job_id = ?) AND (? IS NULL OR workflow_id = ?)
	AND (? IS NULL OR handler = ?) AND (? IS NULL OR event = ?) AND (? IS NULL OR created_at >= ?)
ORDER BY id DESC LIMIT ?

-- name: logs-since
-- Logger::since: oldest first from a time.
SELECT * FROM {logs} WHERE created_at >= ?
	AND (? IS NULL OR job_id = ?) AND (? IS NULL OR workflow_id = ?)
	AND (? IS NULL OR handler = ?) AND (? IS NULL OR event = ?) AND (? IS NULL OR created_at >= ?)
ORDER BY id ASC LIMIT ?

-- name: logs-handler-stats
-- Metrics::handler_stats: per handler and event, the count and the mean
-- duration of the terminal events since a time; '' (workflow rows) left out.
SELECT handler, event, COUNT(*) AS cnt, AVG(duration_ms) AS avg_ms
FROM {logs}
WHERE event IN ('completed', 'failed', 'buried')
	AND created_at >= ?
	AND handler != ''
GROUP BY handler, event

-- name: logs-p95-count
-- Metrics::p95_duration, first the number of timed completions...
SELECT COUNT(*) FROM {logs}
WHERE event = 'completed' AND created_at >= ? AND duration_ms IS NOT NULL AND handler = ?

-- name: logs-p95-pick
-- ...then the duration at rank ceil(0.95 n) - 1.
SELECT duration_ms FROM {logs}
WHERE event = 'completed' AND created_at >= ? AND duration_ms IS NOT NULL AND handler = ?
ORDER BY duration_ms ASC LIMIT 1 OFFSET ?
