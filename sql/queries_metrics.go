package store

// Query names of queries_metrics.sql.
const (
	qMetricsJobs           = "metrics-jobs"
	qMetricsJobsCompleted  = "metrics-jobs-completed"
	qMetricsOldestPending  = "metrics-oldest-pending"
	qMetricsWorkflows      = "metrics-workflows"
	qMetricsWorkerSessions = "metrics-worker-sessions"
	qMetricsActivities     = "metrics-activities"
)
