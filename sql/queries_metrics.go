package store

// Query names of queries_metrics.sql.
const (
	qMetricsJobs           = "metrics-jobs"
	qMetricsOldestPending  = "metrics-oldest-pending"
	qMetricsWorkflows      = "metrics-workflows"
	qMetricsWorkerSessions = "metrics-worker-sessions"
	qMetricsActivities     = "metrics-activities"
)
