package queuety

import (
	"context"

	imachine "github.com/queuety-go/queuety/queuety/internal/machine"
	store "github.com/queuety-go/queuety/sql"
)

// failStaleMachineActions is recover_stale's fail_action branch: a state
// machine action job the sweep buried marks its machine failed, with
// action_failed and machine_failed rows. Batch counters and chain catches
// are left alone on this path, as the plugin leaves them.
func (c *Client) failStaleMachineActions(ctx context.Context, reg *Registry, buried []store.JobRow) {
	for i := range buried {
		j := &buried[i]
		if j.Handler != machineActionHandler {
			continue
		}
		id, ok, err := c.machines(reg, c.cfg.Logger).FailAction(ctx, &imachine.FailParams{
			Job: actionJobOf(j.ID, j.Queue, j.Attempts, j.Payload), Message: store.StaleMessage})
		if ok && err != nil {
			c.cfg.Logger.Error("marking the state machine of a stale action job failed", "job", j.ID, "machine", id, "err", err)
		}
	}
}
