package store

// Query names of queries_complete.sql.
const (
	qInsertLogs       = "insert-logs"
	qInsertLogsNarrow = "insert-logs-narrow"
	qLockAttempts     = "lock-attempts"
	qCompleteJobs     = "complete-jobs"
	qCompleteHeldJobs = "complete-held-jobs"
	qRetryJob         = "retry-job"
	qBuryJob          = "bury-job"
	qUnclaimJobs      = "unclaim-jobs"
	qReleaseJobLater  = "release-job-later"
	qDeleteStartedLog = "delete-started-log"
)
