package engine

import (
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Child workflows (spec §5): start_workflows / start_agents start
// independent top-level workflows and continue at once; run_workflow
// starts one nested child (parent columns set) and parks the parent until
// the child completes (on_workflow_completed, engine_terminal.go).

// insertChild writes a dispatched child in the transaction.
func (e *Engine) insertChild(tx *store.WorkflowTx, d *workflow.Dispatch) (int64, error) {
	return tx.InsertChildWorkflow(store.InsertWorkflow{
		Name:             d.Workflow.Name,
		State:            d.Workflow.State,
		TotalSteps:       d.Workflow.TotalSteps,
		ParentWorkflowID: d.Workflow.ParentWorkflowID,
		ParentStepIndex:  d.Workflow.ParentStepIndex,
		DeadlineAt:       d.Workflow.DeadlineAt(e.store.Now()),
		Queue:            d.Queue,
		Jobs:             storeJobs(d.Jobs),
	})
}
