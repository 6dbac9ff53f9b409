package engine

import (
	store "github.com/queuety-go/queuety/sql"
)

// StepFailure is a failed step attempt the engine recorded, as the
// plugin's worker reports it to its webhooks: retried (job.failed), or
// buried (job.buried) and then, when that failed the workflow,
// workflow.failed. A for_each branch fails the workflow only when its
// step can no longer complete. EngineConfig.OnStepFailure hears of it:
// it is the engine's report to the worker, not a type users meet.
type StepFailure struct {
	Job            store.JobRow
	Message        string
	Buried         bool
	WorkflowFailed bool
}

// noteStepFailure tells EngineConfig.OnStepFailure of a failed attempt of
// job whose rows are written.
func (e *Engine) noteStepFailure(job *store.JobRow, f Failure, workflowFailed bool) {
	if e.stepFailure != nil {
		e.stepFailure(StepFailure{Job: *job, Message: f.Message, Buried: f.Terminal, WorkflowFailed: workflowFailed})
	}
}
