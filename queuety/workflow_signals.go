package queuety

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Signals to workflows (Queuety::signal and its helpers). The signal row
// is stored whether or not the workflow waits for it (signals are never
// consumed, so a later wait on the same name is satisfied by it), and a
// workflow parked on a matching wait_for_signal step is resumed before the
// call returns, in the same transaction, as the plugin does in the
// sender's process. Signals PHP inserts are picked up by the signal poller
// of `queuety work --workflows`.

// Default signal names of Queuety's helpers. Note the plugin's mismatch:
// Approve sends "approval" (what wait_for_approval waits for) while
// wait_for_decision waits for "approved" / "rejected".
const (
	SignalApproval = "approval"
	SignalRejected = "rejected"
	SignalInput    = "input"
)

// Signal sends a signal to a workflow (Queuety::signal). payload is stored
// as the signal's JSON (PHP json_encode bytes; nil is stored as []): a
// *phpjson.Object, a phpjson.Value holding an array, or a Go map, slice or
// struct-free value phpjson.FromGo accepts. A missing workflow is not an
// error, as in the plugin.
func (c *Client) Signal(ctx context.Context, workflowID int64, name string, payload any) error {
	// signals.signal_name is a VARCHAR(255): a longer name would reach
	// the server as "Data too long" (N14).
	if err := store.CheckName(store.SignalName, name); err != nil {
		return err
	}
	data, err := signalPayload(payload)
	if err != nil {
		return fmt.Errorf("signal %q to workflow %d: %w", name, workflowID, err)
	}
	return c.workflowEngine().Signal(ctx, workflowID, name, data)
}

// Approve sends the approval signal (Queuety::approve_workflow): name
// "approval" unless signal names another.
func (c *Client) Approve(ctx context.Context, workflowID int64, payload any, signal ...string) error {
	return c.Signal(ctx, workflowID, signalName(SignalApproval, signal), payload)
}

// Reject sends the rejection signal (Queuety::reject_workflow): name
// "rejected" unless signal names another.
func (c *Client) Reject(ctx context.Context, workflowID int64, payload any, signal ...string) error {
	return c.Signal(ctx, workflowID, signalName(SignalRejected, signal), payload)
}

// SubmitInput sends the input signal (Queuety::submit_workflow_input):
// name "input" unless signal names another.
func (c *Client) SubmitInput(ctx context.Context, workflowID int64, payload any, signal ...string) error {
	return c.Signal(ctx, workflowID, signalName(SignalInput, signal), payload)
}

func signalName(def string, given []string) string {
	if len(given) > 0 && given[0] != "" {
		return given[0]
	}
	return def
}

// workflowEngine is an engine without Go step handlers: enough to settle
// waits and enqueue the next step (whose handler metadata, if any, comes
// from PHP class attributes the plugin would read; none here).
func (c *Client) workflowEngine() *engine.Engine {
	return c.engine(nil)
}

// signalPayload converts a signal payload to the PHP array it is stored as.
func signalPayload(payload any) (*phpjson.Object, error) {
	v, err := phpjson.FromGo(payload)
	if err != nil {
		return nil, err
	}
	switch v.Kind() {
	case phpjson.KindNull:
		return phpjson.NewObject(), nil
	case phpjson.KindObject:
		o, _ := v.AsObject()
		return o, nil
	case phpjson.KindList:
		list, _ := v.AsList()
		o := phpjson.NewObject()
		for i, e := range list {
			o.Set(fmt.Sprint(i), e)
		}
		return o, nil
	}
	return nil, fmt.Errorf("the payload must be an array (a map, list or phpjson object), not %s", v.Kind())
}
