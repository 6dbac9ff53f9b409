package store

// Query names of queries_waits.sql.
const (
	qInsertSignal             = "insert-signal"
	qSignalsForNames          = "signals-for-names"
	qWorkflowsByIDs           = "workflows-by-ids"
	qWorkflowStatus           = "workflow-status"
	qWorkflowStatusesByIDs    = "workflow-statuses-by-ids"
	qDeleteDependencies       = "delete-dependencies"
	qInsertDependency         = "insert-dependency"
	qMarkDependencySatisfied  = "mark-dependency-satisfied"
	qWakeFacts                = "wake-facts"
	qParkWorkflow             = "park-workflow"
	qResumeWorkflow           = "resume-workflow"
	qWaitingForWorkflowsAfter = "waiting-for-workflows-after"
	qMaxSignalID              = "max-signal-id"
	qSignalWaitersBetween     = "signal-waiters-between"
	qChildOf                  = "child-of"
	qStuckRunWorkflowChildren = "stuck-run-workflow-children"
)
