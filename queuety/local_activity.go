package queuety

import (
	"context"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/queuety/internal/rowview"
	"github.com/queuety-go/queuety/workflow"
)

// Local activities (workflow.Builder.LocalActivity, PHP's
// ->local_activity()): a worker with Config.Workflows runs a local
// activity step in its own process right after the step before it
// committed, under the lease of the step job it already holds, without a
// claim. The engine does the work (internal/engine/local_activity.go); the worker
// only tells it who it is and whether it still takes work (engine_host.go).

// RegisterLocalActivity registers the Go handler of a local activity
// class. It is RegisterStep under another name: a local activity's
// handler receives the workflow state and returns the output merged into
// it, like a step; WithMaxAttempts is the attempts used when the step's
// options give none. Inside it, LocalActivityHeartbeat records progress.
func (r *Registry) RegisterLocalActivity(class string, fn workflow.StepFunc, opts ...HandlerOption) {
	r.RegisterStep(class, fn, opts...)
}

// LocalActivityHeartbeat records progress from inside a local activity's
// handler and renews the lease its attempt runs under
// (engine.ActivityHeartbeat). It returns workflow.ErrActivityCancelled
// when the workflow was cancelled: the handler should stop.
func LocalActivityHeartbeat(ctx context.Context, progress any) error {
	return engine.ActivityHeartbeat(ctx, progress)
}

// ActivityMetrics returns the operator counts of local activities
// (activities.local, local_open, local_attempts, ...) beside the queued
// ones; ActivityMetrics defines each count.
func (c *Client) ActivityMetrics(ctx context.Context) (ActivityMetrics, error) {
	m, err := c.store.ActivityMetrics(ctx)
	return rowview.Activities(m), err
}

// LocalActivities lists a workflow's local activity executions with their
// attempts.
func (c *Client) LocalActivities(ctx context.Context, workflowID int64) ([]workflow.LocalActivityView, error) {
	return c.engine(nil).LocalActivities(ctx, workflowID)
}
