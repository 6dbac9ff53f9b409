package queuety

import (
	"context"

	imachine "github.com/queuety-go/queuety/queuety/internal/machine"
	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// ErrMachineNotFound is returned for a state machine id with no row.
var ErrMachineNotFound = store.ErrMachineNotFound

// Machine returns one state machine's status.
func (c *Client) Machine(ctx context.Context, id int64) (machine.Status, error) {
	row, err := c.store.GetMachine(ctx, id)
	if err != nil {
		return machine.Status{}, err
	}
	return imachine.StatusOf(row), nil
}

// Machines lists state machines, newest first; status "" lists all.
func (c *Client) Machines(ctx context.Context, status string, limit int) ([]machine.Status, error) {
	rows, err := c.store.ListMachines(ctx, status, limit)
	if err != nil {
		return nil, err
	}
	out := make([]machine.Status, len(rows))
	for i, r := range rows {
		out[i] = imachine.StatusOf(r)
	}
	return out, nil
}

// MachineTimeline returns up to limit events of a machine, oldest first.
func (c *Client) MachineTimeline(ctx context.Context, id int64, limit int) ([]machine.Event, error) {
	rows, err := c.store.MachineEvents(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	out := make([]machine.Event, len(rows))
	for i, e := range rows {
		out[i] = imachine.EventOf(e)
	}
	return out, nil
}

// MachineEvent sends an external event to a waiting machine
// (Queuety::machine_event): payload is a JSON object (nil for none), its
// keys not starting with "_" merged into the state. The transition's
// guards run here, Go ones or PHP ones in reg's pool. A refused event
// writes its event_rejected row and returns an error wrapping
// machine.ErrEventRejected.
func (c *Client) MachineEvent(ctx context.Context, reg *Registry, id int64, event string, payload []byte) error {
	return c.machines(reg, c.cfg.Logger).Event(ctx, id, event, payload)
}
