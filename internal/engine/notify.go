package engine

import (
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

func (e *Engine) noteStepFailure(job *store.JobRow, f Failure, workflowFailed bool) {
	if e.stepFailure != nil {
		e.stepFailure(workflow.StepFailure{Job: *job, Message: f.Message, Buried: f.Terminal, WorkflowFailed: workflowFailed})
	}
}
