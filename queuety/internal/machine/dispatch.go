package machine

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Dispatch starts a state machine as StateMachine::dispatch_definition
// does: its row, machine_started, then the initial state's action job
// (action_enqueued) or its lifecycle event. initial returns the machine's
// public state as JSON bytes (nil: none); it is called once the definition
// is known to be good. With an idempotency key already used, the existing
// machine's id is returned and existing is true.
func (m *Runtime) Dispatch(ctx context.Context, b *Builder, initial func() ([]byte, error)) (id int64, existing bool, err error) {
	def, hash, err := b.definition()
	if err != nil {
		return 0, false, err
	}
	raw, err := initial()
	if err != nil {
		return 0, false, fmt.Errorf("initial state: %w", err)
	}
	state := phpjson.NewObject()
	if raw != nil {
		v, err := phpjson.Decode(raw)
		if err != nil {
			return 0, false, fmt.Errorf("initial state: %w", err)
		}
		state = asArray(v)
	}
	defBytes, err := phpjson.Encode(objVal(def))
	if err != nil {
		return 0, false, err
	}
	initialName := b.initial
	sd := asArray(get(asArray(get(def, "states")), initialName))
	status := statusForEnteredState(sd)
	now := m.now()
	row := store.NewMachine{Name: b.name, Status: status, CurrentState: initialName, State: encString(state),
		Definition: string(defBytes), DefinitionHash: store.String(hash), DefinitionVersion: nullStr(b.version)}
	switch status {
	case machineCompleted, machineCancelled:
		row.CompletedAt = &now
	case machineFailed:
		row.FailedAt = &now
	}
	if b.key != "" {
		row.IdempotencyKey = store.String(b.key)
	}
	tx, err := m.st.BeginMachine(ctx)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = tx.Rollback() }()
	if b.key != "" {
		if id, err := tx.FindByKey(ctx, b.key); err != nil || id > 0 {
			return id, id > 0, err
		}
	}
	id, err = tx.Insert(ctx, row)
	if err != nil {
		if b.key != "" {
			// Another dispatch with the key won the race.
			_ = tx.Rollback()
			if found, ferr := m.st.FindMachineByKey(ctx, b.key); ferr == nil && found > 0 {
				return found, true, nil
			}
		}
		return 0, false, err
	}
	out := obj("status", str(status))
	if err := tx.Event(ctx, store.MachineEvent{MachineID: id, StateName: initialName, Event: "machine_started",
		Input: enc(state), Output: enc(out), StateAfter: enc(state),
		Context: enc(obj("name", str(b.name), "initial_state", str(initialName), "definition_hash", str(hash)))}); err != nil {
		return 0, false, err
	}
	switch status {
	case machineRunning:
		err = m.enqueueAction(ctx, tx, id, def, initialName, nil, phpjson.NewObject(), state)
	case machineWaitingEvent:
		err = m.lifecycleEvent(ctx, tx, id, initialName, "machine_waiting", nil, state, out)
	case machineCompleted:
		err = m.lifecycleEvent(ctx, tx, id, initialName, "machine_completed", nil, state, out)
	case machineFailed:
		err = m.lifecycleEvent(ctx, tx, id, initialName, "machine_failed", nil, state, out)
	case machineCancelled:
		err = m.lifecycleEvent(ctx, tx, id, initialName, "machine_cancelled", nil, state, out)
	}
	if err != nil {
		return 0, false, err
	}
	return id, false, tx.Commit()
}
