package store

// Query names of queries_activities.sql (local activities).
const (
	qInsertClaimedStepJob                = "insert-claimed-step-job"
	qRenewJobLease                       = "renew-job-lease"
	qRenewJobLeaseProgress               = "renew-job-lease-progress"
	qGetActivityExecutionByJob           = "get-activity-execution-by-job"
	qStartActivityExecution              = "start-activity-execution"
	qInsertActivityAttempt               = "insert-activity-attempt"
	qCloseActivityAttempt                = "close-activity-attempt"
	qCloseActivityExecution              = "close-activity-execution"
	qRetryActivityExecution              = "retry-activity-execution"
	qHeartbeatActivityExecution          = "heartbeat-activity-execution"
	qHeartbeatActivityAttempt            = "heartbeat-activity-attempt"
	qActivityExecutionsOfWF              = "activity-executions-of-workflow"
	qActivityAttemptsOfWF                = "activity-attempts-of-workflow"
	qActivityExecutionMetrics            = "activity-execution-metrics"
	qActivityAttemptMetrics              = "activity-attempt-metrics"
	qQueuedStepJobMetrics                = "queued-step-job-metrics"
	qQueuedStepFailedAttempts            = "queued-step-failed-attempts"
	qPlainJobMetrics                     = "plain-job-metrics"
	qTruncateActivityExecutions          = "truncate-activity-executions"
	qTruncateActivityAttempts            = "truncate-activity-attempts"
	qLockJobWithExecution                = "lock-job-with-execution"
	qInsertRunningActivityExecution      = "insert-running-activity-execution"
	qCompleteActivityAttemptAndExecution = "complete-activity-attempt-and-execution"
	qCompleteLocalStep                   = "complete-local-step"
)
