package queuety

import (
	"context"
	"log/slog"
	"time"

	imachine "github.com/queuety-go/queuety/queuety/internal/machine"
	"github.com/queuety-go/queuety/queuety/machine"
)

// The state machines run in queuety/internal/machine; their public names
// (the builder, actions, guards, status views, ErrEventRejected) are in
// queuety/machine alone. What follows builds a runtime per use over the
// Client's store and a Registry's Go actions, guards and PHP pool, and
// hands it the worker's action jobs.

// errLeaveToPHP hands an action job back to pending untouched: this
// worker can run neither a Go nor a PHP action for it.
var errLeaveToPHP = imachine.ErrLeaveToPHP

// machines is a state machine runtime over reg (nil: an empty one).
func (c *Client) machines(reg *Registry, log *slog.Logger) *imachine.Runtime {
	if reg == nil {
		reg = NewRegistry()
	}
	return imachine.NewRuntime(&imachine.Params{Store: c.store, Handlers: machineHandlers{reg}, Now: c.cfg.Clock.Now,
		Log: log, HandBack: []error{ErrShutdown, ErrJobLost}})
}

// DispatchMachine starts a state machine as StateMachine::dispatch_definition
// does: its row, machine_started, then the initial state's action job
// (action_enqueued) or its lifecycle event. initial is the machine's
// public state: a map or struct, JSON bytes, or nil for none. With an
// idempotency key already used, the existing machine's id is returned
// and existing is true.
func (c *Client) DispatchMachine(ctx context.Context, b *machine.Builder, initial any) (id int64, existing bool, err error) {
	return c.machines(nil, c.cfg.Logger).Dispatch(ctx, b, func() ([]byte, error) {
		if initial == nil {
			return nil, nil
		}
		return EncodePayload(initial)
	})
}

// failMachineAction runs fail_action for a buried action job of this
// worker, logging what it cannot do. Like the chain catch it runs after
// the burial's write: ctx's values, not its end.
func (r *recorder) failMachineAction(ctx context.Context, rj *running, message string, recorded bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	id, ok, err := r.Machines.FailAction(ctx, &imachine.FailParams{
		Job: actionJobOf(rj.row.ID, rj.row.Queue, rj.row.Attempts, rj.row.Payload), Message: message, Recorded: recorded})
	if ok && err != nil {
		r.Log.Error("marking the state machine failed after its action job was buried failed", "job", rj.row.ID, "machine", id, "err", err)
	}
}

func actionJobOf(id int64, queue string, attempt int, payload string) imachine.ActionJob {
	return imachine.ActionJob{ID: id, Queue: queue, Attempt: attempt, Payload: payload}
}

// machineHandlers are a Registry's, as the runtime reads them.
type machineHandlers struct{ r *Registry }

func (h machineHandlers) Action(class string) (imachine.Action, bool) { return h.r.stateAction(class) }
func (h machineHandlers) Guard(class string) (imachine.Guard, bool)   { return h.r.stateGuard(class) }

func (h machineHandlers) ClassCaller() imachine.ClassCaller {
	if c := h.r.classCaller(); c != nil {
		return machineCaller{c}
	}
	return nil
}

func (h machineHandlers) ClassMetadata() imachine.MetadataSource {
	if m := h.r.classMetadata(); m != nil {
		return m
	}
	return nil
}

// machineCaller runs a machine's class calls in the registry's pool.
type machineCaller struct{ c ClassCaller }

func (m machineCaller) CallClass(ctx context.Context, c imachine.ClassCall) ([]byte, error) {
	return m.c.CallClass(ctx, ClassCall{Class: c.Class, Method: c.Method, Args: c.Args, Contract: c.Contract,
		MissingMessage: c.MissingMessage, ContractMessage: c.ContractMessage})
}
