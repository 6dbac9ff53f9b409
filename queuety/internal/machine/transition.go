package machine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// applyTransition is apply_transition_from_locked_context, inside lm's
// transaction (the caller commits): the transition the event and guards
// allow, its row and events, and the entered state's action job or
// lifecycle event.
func (m *Runtime) applyTransition(ctx context.Context, lm *lockedMachine, state *phpjson.Object, eventName string, eventPayload *phpjson.Object) error {
	id := lm.row.ID
	tr, err := m.resolveTransition(ctx, lm, state, eventName, eventPayload)
	if err != nil {
		return err
	}
	if tr == nil {
		return runtimeError("State '%s' does not allow event '%s'.", lm.currentState, eventName)
	}
	target := scalarString(get(tr, "target_state"), "")
	targetDef, ok := asArray(get(lm.definition, "states")).Get(target)
	if !ok || !isArray(targetDef) {
		return runtimeError("State machine target state '%s' is missing from the definition.", target)
	}
	td := asArray(targetDef)
	name := get(tr, "name")
	if name.IsNull() {
		name = str(eventName)
	}
	if err := lm.tx.Event(ctx, store.MachineEvent{MachineID: id, StateName: lm.currentState, Event: "transitioned",
		EventName: store.String(eventName), TransitionName: store.String(scalarString(name, "")), Input: enc(eventPayload),
		Output:      enc(obj("from", str(lm.currentState), "to", str(target), "name", name, "event", str(eventName))),
		StateBefore: enc(state), StateAfter: enc(state),
		Context: enc(obj("from", str(lm.currentState), "to", str(target)))}); err != nil {
		return err
	}
	status := statusForEnteredState(td)
	u := store.MachineUpdate{Status: status, CurrentState: target, State: encString(state)}
	now := m.now()
	switch status {
	case machineCompleted, machineCancelled:
		u.CompletedAt = &now
	case machineFailed:
		u.FailedAt = &now
	}
	if err := lm.tx.Update(ctx, id, u); err != nil {
		return err
	}
	ev := &eventName
	switch status {
	case machineRunning:
		return m.enqueueAction(ctx, lm.tx, id, lm.definition, target, ev, eventPayload, state)
	case machineWaitingEvent:
		return m.lifecycleEvent(ctx, lm.tx, id, target, "machine_waiting", ev, state, eventPayload)
	case machineCompleted:
		return m.lifecycleEvent(ctx, lm.tx, id, target, "machine_completed", ev, state, eventPayload)
	case machineFailed:
		return m.lifecycleEvent(ctx, lm.tx, id, target, "machine_failed", ev, state, eventPayload)
	case machineCancelled:
		return m.lifecycleEvent(ctx, lm.tx, id, target, "machine_cancelled", ev, state, eventPayload)
	}
	return nil
}

// resolveTransition is resolve_transition: the first transition of the
// current state for the event whose guard (if any) allows it, with each
// guard's guard_started and guard_completed (or guard_failed) rows.
func (m *Runtime) resolveTransition(ctx context.Context, lm *lockedMachine, state *phpjson.Object, eventName string, eventPayload *phpjson.Object) (*phpjson.Object, error) {
	id := lm.row.ID
	transitions, _ := get(lm.stateDef, "transitions").AsList()
	if o, ok := get(lm.stateDef, "transitions").AsObject(); ok {
		for _, v := range o.All() {
			transitions = append(transitions, v)
		}
	}
	for _, t := range transitions {
		if !isArray(t) {
			continue
		}
		tr := asArray(t)
		if scalarString(get(tr, "event"), "") != eventName {
			continue
		}
		guard := handlerDefOf(tr, "guard", "guard_class")
		if guard == nil {
			return tr, nil
		}
		name := eventName
		if s, ok := get(tr, "name").AsString(); ok {
			name = s
		}
		target := scalarString(get(tr, "target_state"), "")
		input := obj("state", objVal(cloneObj(state)), "event", str(eventName), "event_payload", objVal(eventPayload), "payload", objVal(guard.payload))
		gctx := obj("from", str(lm.currentState), "to", str(target), "event", str(eventName))
		started := time.Now()
		goGuard, isGo := m.h.Guard(guard.class)
		caller := m.h.ClassCaller()
		if !isGo && caller == nil {
			return nil, runtimeError("State guard class '%s' could not be loaded.", guard.class)
		}
		base := store.MachineEvent{MachineID: id, StateName: lm.currentState, Handler: store.String(guard.class),
			EventName: store.String(eventName), TransitionName: store.String(name), Input: enc(input),
			StateBefore: enc(state), StateAfter: enc(state), Context: enc(gctx)}
		ev := base
		ev.Event, ev.Output = "guard_started", enc(eventPayload)
		var allowed bool
		var err error
		if isGo {
			if err := lm.tx.Event(ctx, ev); err != nil {
				return nil, err
			}
			allowed, err = callGuard(ctx, goGuard, Call{MachineID: id, StateName: lm.currentState,
				State: rawObj(state), Event: eventName, EventPayload: rawObj(eventPayload), Payload: rawObj(guard.payload)})
		} else {
			// The plugin builds the guard before guard_started: a class
			// it cannot load fails without the row. The pool builds it
			// at the call, so guard_started is undone for that case.
			allowed, err = m.callPHPGuard(ctx, lm.tx, ev, caller, guard, state, eventName, eventPayload)
			if err != nil && instantiationFailed(err, guard.class, "guard") {
				return nil, err
			}
		}
		if err != nil {
			fe := base
			fe.Event, fe.Error = "guard_failed", enc(errorPayload(err))
			fe.DurationMS = store.Int(time.Since(started).Milliseconds())
			if werr := lm.tx.Event(ctx, fe); werr != nil {
				return nil, errors.Join(err, werr)
			}
			return nil, err
		}
		ce := base
		ce.Event, ce.Output = "guard_completed", enc(obj("allowed", phpjson.Bool(allowed)))
		ce.DurationMS = store.Int(time.Since(started).Milliseconds())
		if err := lm.tx.Event(ctx, ce); err != nil {
			return nil, err
		}
		if allowed {
			return tr, nil
		}
	}
	return nil, nil
}

// callPHPGuard writes guard_started under a savepoint, calls the guard in
// the pool, and takes the row back when the pool could not build it.
func (m *Runtime) callPHPGuard(ctx context.Context, tx *store.MachineTx, started store.MachineEvent, caller ClassCaller,
	g *handlerDef, state *phpjson.Object, eventName string, eventPayload *phpjson.Object) (bool, error) {
	if err := tx.Savepoint(ctx); err != nil {
		return false, err
	}
	if err := tx.Event(ctx, started); err != nil {
		return false, err
	}
	b, _ := phpjson.Encode(phpjson.List(objVal(state), objVal(eventPayload), str(eventName), objVal(g.payload)))
	out, err := caller.CallClass(ctx, ClassCall{Class: g.class, Method: "allows", Args: b,
		Contract:        `Queuety\Contracts\StateGuard`,
		MissingMessage:  fmt.Sprintf("State guard class '%s' could not be loaded.", g.class),
		ContractMessage: fmt.Sprintf("State guard class '%s' must implement Queuety\\Contracts\\StateGuard.", g.class)})
	if err != nil {
		if instantiationFailed(err, g.class, "guard") {
			if rerr := tx.RollbackToSavepoint(ctx); rerr != nil {
				return false, errors.Join(err, rerr)
			}
		}
		return false, err
	}
	switch strings.TrimSpace(string(out)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &phpError{class: "TypeError", msg: fmt.Sprintf("%s::allows(): Return value must be of type bool, %s returned", g.class, out)}
}

func callGuard(ctx context.Context, fn Guard, c Call) (ok bool, err error) {
	defer throwable.Catch(&err)
	return fn(ctx, c)
}

// enqueueAction is enqueue_state_action: the entered state's action job
// and its action_enqueued row, with the action class's concurrency group
// and cost (HandlerMetadata::from_class) where they can be read: see
// actionDefaults.
func (m *Runtime) enqueueAction(ctx context.Context, tx *store.MachineTx, id int64, def *phpjson.Object,
	stateName string, eventName *string, eventPayload, state *phpjson.Object) error {
	sd := asArray(get(asArray(get(def, "states")), stateName))
	action := handlerDefOf(sd, "action", "action_class")
	if action == nil {
		return nil
	}
	queue := scalarString(get(def, "queue"), "default")
	if v, ok := def.Get("queue"); !ok || v.IsNull() {
		queue = "default"
	}
	priority := phpInt(get(def, "priority"), 0)
	if priority < int64(workflow.PriorityLow) || priority > int64(workflow.PriorityUrgent) {
		priority = int64(workflow.PriorityLow)
	}
	attempts := int64(3)
	if v, ok := def.Get("max_attempts"); ok && !v.IsNull() {
		attempts = phpInt(v, 3)
	}
	attempts = max(1, attempts)
	payload, err := phpjson.Encode(objVal(obj("machine_id", phpjson.Int(id), "state_name", str(stateName),
		"event_name", strOrNull(eventName), "event_payload", objVal(eventPayload))))
	if err != nil {
		return err
	}
	job := store.MachineActionJob{Queue: queue, Payload: payload, Priority: int(priority), MaxAttempts: int(attempts), CostUnits: 1}
	m.actionDefaults(action.class, &job)
	jobID, err := tx.EnqueueAction(ctx, job)
	if err != nil {
		return err
	}
	out := obj("job_id", phpjson.Int(jobID), "handler", str(action.class), "queue", str(queue), "priority", phpjson.Int(priority))
	return tx.Event(ctx, store.MachineEvent{MachineID: id, JobID: store.Int(jobID), StateName: stateName,
		Handler: store.String(action.class), Event: "action_enqueued", EventName: nullStr(eventName),
		Queue: store.String(queue),
		Input: enc(obj("state", objVal(state), "event", strOrNull(eventName), "event_payload", objVal(eventPayload),
			"payload", objVal(action.payload))),
		Output: enc(out), StateBefore: enc(state), StateAfter: enc(state),
		Context: enc(obj("state", str(stateName), "event", strOrNull(eventName)))})
}

// actionDefaults gives an action job its class's concurrency group, limit
// and cost, as the plugin's enqueue_state_action reads them with
// HandlerMetadata::from_class. They are PHP's to read: through the PHP
// pool when there is one (the registry's fallback) and the class has no Go
// state action; without it the job keeps the defaults (no group, cost 1).
func (m *Runtime) actionDefaults(class string, job *store.MachineActionJob) {
	src := m.h.ClassMetadata()
	if src == nil {
		return
	}
	if _, goAction := m.h.Action(class); goAction {
		return
	}
	meta := src.HandlerMetadata(class)
	// Queue::dispatch's rule: both stored, or neither.
	if g, l := phpjson.ConcurrencyGroup(meta.ConcurrencyGroup, meta.ConcurrencyLimit); g != "" {
		job.ConcurrencyGroup = store.String(g)
		job.ConcurrencyLimit = sql.NullInt64{Int64: l, Valid: true}
	}
	if meta.CostUnits > 0 {
		job.CostUnits = meta.CostUnits
	}
}

// ErrEventRejected wraps the reason a machine refused an event
// (Queuety::machine_event throws it); the event_rejected row is written.
var ErrEventRejected = errors.New("event rejected")

// Event sends an external event to a waiting machine
// (Queuety::machine_event): payload is a JSON object (nil for none), its
// keys not starting with "_" merged into the state. The transition's
// guards run here. A refused event writes its event_rejected row and
// returns an error wrapping ErrEventRejected; a machine with no row is
// store.ErrMachineNotFound.
func (m *Runtime) Event(ctx context.Context, id int64, event string, payload []byte) error {
	p := phpjson.NewObject()
	if len(payload) > 0 {
		v, err := phpjson.Decode(payload)
		if err != nil {
			return fmt.Errorf("event payload: %w", err)
		}
		if !isArray(v) {
			return fmt.Errorf("event payload: a JSON object is required, got %s", v.Kind())
		}
		p = asArray(v)
	}
	err := m.sendEvent(ctx, id, event, p)
	var pe *phpError
	if errors.As(err, &pe) && !errors.Is(err, ErrEventRejected) && pe.msg == fmt.Sprintf("State machine %d not found.", id) {
		return fmt.Errorf("state machine %d: %w", id, store.ErrMachineNotFound)
	}
	return err
}

// sendEvent is StateMachine::send_event.
func (m *Runtime) sendEvent(ctx context.Context, id int64, eventName string, payload *phpjson.Object) error {
	eventName = phpjson.Trim(eventName)
	if eventName == "" {
		return &phpError{class: "InvalidArgumentException", msg: "State machine event name cannot be empty."}
	}
	lm, err := m.lock(ctx, id)
	if err != nil {
		return err
	}
	defer func() { _ = lm.tx.Rollback() }() // after a commit: a no-op
	err = m.deliver(ctx, lm, eventName, payload)
	if err == nil {
		return lm.tx.Commit()
	}
	if werr := lm.tx.Event(ctx, store.MachineEvent{MachineID: id, StateName: lm.currentState, Event: "event_rejected",
		EventName: store.String(eventName), Input: enc(payload),
		Output:      enc(obj("rejected", phpjson.Bool(true), "message", str(err.Error()))),
		StateBefore: enc(lm.state), StateAfter: enc(lm.state), Context: enc(obj("event", str(eventName))),
		Error: enc(errorPayload(err))}); werr != nil {
		return errors.Join(err, werr)
	}
	if cerr := lm.tx.Commit(); cerr != nil {
		return errors.Join(err, cerr)
	}
	return fmt.Errorf("%w: %w", ErrEventRejected, err)
}

func (m *Runtime) deliver(ctx context.Context, lm *lockedMachine, eventName string, payload *phpjson.Object) error {
	if lm.status != machineWaitingEvent {
		return runtimeError("State machine %d is not waiting for external events; current status is '%s'.", lm.row.ID, lm.status)
	}
	state := cloneObj(lm.state)
	for k, v := range payload.All() {
		if !isIntKey(k) && !strings.HasPrefix(k, "_") {
			state.Set(k, v)
		}
	}
	if err := lm.tx.Event(ctx, store.MachineEvent{MachineID: lm.row.ID, StateName: lm.currentState, Event: "event_received",
		EventName: store.String(eventName), Input: enc(payload), Output: enc(payload),
		StateBefore: enc(lm.state), StateAfter: enc(state), Context: enc(obj("event", str(eventName)))}); err != nil {
		return err
	}
	return m.applyTransition(ctx, lm, state, eventName, payload)
}
