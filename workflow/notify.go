package workflow

import (
	store "github.com/queuety-go/queuety/sql"
)

func (e *Engine) noteStepFailure(job *store.JobRow, f Failure, workflowFailed bool) {
	if e.stepFailure != nil {
		e.stepFailure(StepFailure{Job: *job, Message: f.Message, Buried: f.Terminal, WorkflowFailed: workflowFailed})
	}
}
