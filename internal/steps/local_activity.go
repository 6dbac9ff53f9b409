package steps

import (
	"context"

	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// localActivity is a local activity step (builder: LocalActivity). Its
// runtime (attempts, retries, timeouts, heartbeats) is the engine's
// subsystem in workflow/local_activity*.go; the kind only routes to it: a
// worker that takes local work runs the step in process right after the
// commit that enqueues it, and a job that went through the claim runs
// there too.
type localActivity struct{}

func (localActivity) Type() workflow.StepType { return workflow.StepLocalActivity }

func (localActivity) Enqueue(ctx context.Context, a *engine.Advance, step workflow.Step, index int) (bool, error) {
	return a.EnqueueLocal(ctx, step, index)
}

func (localActivity) RunClaimed(ctx context.Context, e *engine.Engine, job *store.JobRow) error {
	return e.RunLocalClaimed(ctx, job)
}
