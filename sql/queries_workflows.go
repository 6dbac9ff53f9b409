package store

// Query names of queries_workflows.sql.
const (
	qFindDispatchKey        = "find-dispatch-key"
	qInsertDispatchKey      = "insert-dispatch-key"
	qInsertWorkflow         = "insert-workflow"
	qGetWorkflow            = "get-workflow"
	qLockWorkflow           = "lock-workflow"
	qLockJob                = "lock-job"
	qLockWorkflows          = "lock-workflows"
	qLockJobs               = "lock-jobs"
	qAdvanceWorkflows       = "advance-workflows"
	qCompleteWorkflowJobs   = "complete-workflow-jobs"
	qUpdateWorkflowState    = "update-workflow-state"
	qAdvanceWorkflow        = "advance-workflow"
	qCompleteWorkflow       = "complete-workflow"
	qFailWorkflow           = "fail-workflow"
	qCompleteWorkflowJob    = "complete-workflow-job"
	qCompleteWorkflowJobAny = "complete-workflow-job-any"
	qCountCompletedStepJobs = "count-completed-step-jobs"
	qBuryStepJobs           = "bury-step-jobs"
	qBuryWorkflowJobs       = "bury-workflow-jobs"
	qClaimJobByID           = "claim-job-by-id"
	qInsertWorkflowEvent    = "insert-workflow-event"
	qRetryWorkflowJob       = "retry-workflow-job"
)
