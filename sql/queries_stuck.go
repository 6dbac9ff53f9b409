package store

// Query names of queries_stuck.sql.
const (
	qStuckReason             = "stuck-reason"
	qStuckPendingJobs        = "stuck-pending-jobs"
	qStuckDependentJobs      = "stuck-dependent-jobs"
	qStuckProcessingJobs     = "stuck-processing-jobs"
	qStuckJobsByID           = "stuck-jobs-by-id"
	qStuckWorkflowCandidates = "stuck-workflow-candidates"
	qJobsByIDs               = "jobs-by-ids"
)
