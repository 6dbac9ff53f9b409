package steps

import (
	"context"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// runWaitPlaceholder runs a wait's placeholder job as the plugin's worker
// does: the job is completed first (Queue::complete, whatever its
// status), then evaluate runs when the workflow is still there, at the
// step, and live or in the wait's own status (waiting); then the worker's
// `completed` log; all in one transaction here.
func runWaitPlaceholder(ctx context.Context, r *engine.Run, typ workflow.StepType, waiting workflow.Status,
	evaluate func(ctx context.Context, a *engine.Advance, index int, step workflow.Step) error) (*engine.Advance, error) {
	job, index := r.Job(), r.Index()
	return r.Transact(ctx, func(a *engine.Advance) error {
		tx := a.Tx()
		if err := tx.CompleteJobAny(job.ID); err != nil {
			return err
		}
		step, ok, err := a.LockStep(job.WorkflowID.Int64, index)
		if err != nil {
			return err
		}
		if ok && phpjson.ToString(field(step, "type")) == string(typ) && a.Current() == index &&
			(workflow.IsLive(a.Workflow().Status) || a.Workflow().Status == string(waiting)) {
			if err := evaluate(ctx, a, index, step); err != nil {
				return err
			}
		}
		return tx.InsertLogs(r.CompletedLog(r.Elapsed()))
	})
}
