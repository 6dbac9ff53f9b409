package queuety

import (
	"context"

	store "github.com/queuety-go/queuety/sql"
)

// failStaleMachineActions is recover_stale's fail_action branch: a state
// machine action job the sweep buried marks its machine failed, with
// action_failed and machine_failed rows. Batch counters and chain catches
// are left alone on this path, as the plugin leaves them.
func (c *Client) failStaleMachineActions(ctx context.Context, reg *Registry, buried []store.JobRow) {
	for i := range buried {
		j := &buried[i]
		if j.Handler != MachineActionHandler {
			continue
		}
		meta, ok := parseActionMeta(j.Payload)
		if !ok {
			continue
		}
		rt := jobRuntime{jobID: j.ID, queue: j.Queue, attempt: j.Attempts}
		if err := c.machines(reg).failAction(ctx, meta.machineID, meta.stateName, store.StaleMessage, rt, false); err != nil {
			c.cfg.Logger.Error("marking the state machine of a stale action job failed", "job", j.ID, "machine", meta.machineID, "err", err)
		}
	}
}
