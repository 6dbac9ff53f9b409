package store

// Query names of queries_admin.sql.
const (
	qListJobs       = "list-jobs"
	qGetJob         = "get-job"
	qJobLogs        = "job-logs"
	qRetryJobByHand = "retry-job-by-hand"
	qBuriedIDs      = "buried-ids"
	qRetryBuried    = "retry-buried"
	qBuryJobByHand  = "bury-job-by-hand"
	qDeleteJob      = "delete-job"
	qCountBuried    = "count-buried"
	qCountPurgeable = "count-purgeable"
	qPurgeCompleted = "purge-completed"
	qTruncateJobs   = "truncate-jobs"
	qTruncateLogs   = "truncate-logs"
	qCountLogEvents = "count-log-events"
)
