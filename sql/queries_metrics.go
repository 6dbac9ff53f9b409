package store

// Query names of queries_metrics.sql.
const (
	qMetricsJobs           = "metrics-jobs"
	qMetricsJobsCompleted  = "metrics-jobs-completed"
	qMetricsOldestRunnable = "metrics-oldest-runnable"
	qMetricsJobsWaiting    = "metrics-jobs-waiting"
	qMetricsLiveWorkers    = "metrics-live-workers"
	qMetricsLogHead        = "metrics-log-head"
	qMetricsLogCompletions = "metrics-log-completions"
	qMetricsWorkflows      = "metrics-workflows"
	qMetricsWorkerSessions = "metrics-worker-sessions"
	qMetricsActivities     = "metrics-activities"
)
