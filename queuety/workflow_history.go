package queuety

import (
	"context"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// WorkflowStateAt is Queuety::workflow_state_at: the public state recorded
// after step index completed (or its wait resumed); nil when none was.
func (c *Client) WorkflowStateAt(ctx context.Context, id int64, step int) (*phpjson.Object, error) {
	return c.engine(nil).StateAt(ctx, id, step)
}

// RewindWorkflow is Queuety::rewind_workflow: the workflow takes the state
// recorded after step toStep and runs again from the step after it; its
// live jobs are buried ("Superseded by workflow rewind"). reg supplies the
// settings of the step class enqueued, as for RetryWorkflow.
func (c *Client) RewindWorkflow(ctx context.Context, id int64, toStep int, reg *Registry, opts ...RerunOption) error {
	return c.rerunEngine(reg, opts).Rewind(ctx, id, toStep)
}

// ForkWorkflow is Queuety::fork_workflow: a running copy of the workflow
// at its current step, whose step is enqueued. It returns the copy's id.
func (c *Client) ForkWorkflow(ctx context.Context, id int64, reg *Registry, opts ...RerunOption) (int64, error) {
	return c.rerunEngine(reg, opts).Fork(ctx, id, c.cfg.Clock.Now())
}

// ReplayWorkflow is Queuety::replay_workflow: a new workflow from an
// export document (ExportWorkflow's, or the plugin's export_workflow),
// with its history copied and, when it was running, its current step
// enqueued. It returns the new workflow's id.
func (c *Client) ReplayWorkflow(ctx context.Context, doc *phpjson.Object, reg *Registry, opts ...RerunOption) (int64, error) {
	return c.rerunEngine(reg, opts).Replay(ctx, doc, c.cfg.Clock.Now())
}
