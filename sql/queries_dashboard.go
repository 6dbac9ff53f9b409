package store

// Query names of queries_dashboard.sql.
const (
	qDashCompletedLastHour = "dash-completed-last-hour"
	qDashBuriedScan        = "dash-buried-scan"
	qDashStaleProcessing   = "dash-stale-processing"
	qDashThroughput        = "dash-throughput"
	qDashListJobs          = "dash-list-jobs"
	qDashCountJobs         = "dash-count-jobs"
	qDashJobIDs            = "dash-job-ids"
	qDashListWorkflows     = "dash-list-workflows"
	qDashCountWorkflows    = "dash-count-workflows"
	qDashWorkflowIDs       = "dash-workflow-ids"
	qDashPendingSession    = "dash-pending-session-jobs"
	qDashListBatches       = "dash-list-batches"
	qDashBatchJobs         = "dash-batch-jobs"
	qDashScheduleGet       = "dash-schedule-get"
	qDashScheduleEnabled   = "dash-schedule-set-enabled"
	qDashScheduleRunNow    = "dash-schedule-run-now"
)
