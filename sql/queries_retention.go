package store

// Query names of queries_retention.sql.
const (
	qRetentionLock             = "retention-lock"
	qRetentionUnlock           = "retention-unlock"
	qRetentionCompletedWhere   = "retention-completed-where"
	qRetentionBuriedWhere      = "retention-buried-where"
	qRetentionLogsWhere        = "retention-logs-where"
	qRetentionEventsWhere      = "retention-events-where"
	qRetentionWorkflowsWhere   = "retention-workflows-where"
	qRetentionCountJobs        = "retention-count-jobs"
	qRetentionDeleteJobs       = "retention-delete-jobs"
	qRetentionCountLogs        = "retention-count-logs"
	qRetentionDeleteLogs       = "retention-delete-logs"
	qRetentionCountEvents      = "retention-count-events"
	qRetentionDeleteEvents     = "retention-delete-events"
	qRetentionCountWorkflows   = "retention-count-workflows"
	qRetentionSelectWorkflows  = "retention-select-workflows"
	qRetentionWorkflowEvents   = "retention-workflow-events"
	qRetentionWorkflowJobs     = "retention-workflow-jobs"
	qRetentionWorkflowSignals  = "retention-workflow-signals"
	qRetentionWorkflowDeps     = "retention-workflow-dependencies"
	qRetentionWorkflowDispatch = "retention-workflow-dispatch-keys"
	qRetentionWorkflowRows     = "retention-workflow-rows"
)
