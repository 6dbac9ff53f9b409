package machine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	store "github.com/queuety-go/queuety/sql"
)

// Runtime runs the plugin's state machines from their rows
// (StateMachine): action jobs, events with their guards, and failed
// actions. Actions and guards are Go functions registered by class name,
// else PHP classes run in the pool. A Runtime is cheap: build one per use.
type Runtime struct {
	st       *store.Store
	h        Handlers
	now      func() time.Time
	log      *slog.Logger
	handBack []error
}

// Params builds a Runtime.
type Params struct {
	Store *store.Store
	// Handlers are the Go actions and guards and the PHP pool.
	Handlers Handlers
	// Now is the application clock (the rows' completed_at, failed_at).
	Now func() time.Time
	Log *slog.Logger
	// HandBack are the context causes that end an action without failing
	// it: the attempt is handed back (a worker's shutdown) or was taken
	// from this worker, and the plugin's rows for it are the next run's.
	HandBack []error
}

// NewRuntime returns a runtime over p.
func NewRuntime(p *Params) *Runtime {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{st: p.Store, h: p.Handlers, now: p.Now, log: log, handBack: p.HandBack}
}

// phpError is an error the plugin raises as a PHP exception: its class
// goes to error_class and to the event's error payload.
type phpError struct {
	class, msg string
}

func (e *phpError) Error() string      { return e.msg }
func (e *phpError) ErrorClass() string { return e.class }

func runtimeError(format string, args ...any) error {
	return &phpError{class: "RuntimeException", msg: fmt.Sprintf(format, args...)}
}

// ErrLeaveToPHP hands an action job back to pending untouched: this
// worker can run neither a Go nor a PHP action for it.
var ErrLeaveToPHP = errors.New("state action left to PHP workers")

// lockedMachine is lock_machine's context.
type lockedMachine struct {
	tx           *store.MachineTx
	row          store.MachineRow
	definition   *phpjson.Object
	state        *phpjson.Object
	stateDef     *phpjson.Object
	currentState string
	status       string
}

// lock is StateMachine::lock_machine.
func (m *Runtime) lock(ctx context.Context, id int64) (*lockedMachine, error) {
	tx, row, err := m.st.LockMachine(ctx, id)
	if errors.Is(err, store.ErrMachineNotFound) {
		return nil, runtimeError("State machine %d not found.", id)
	}
	if err != nil {
		return nil, err
	}
	def := asArray(parsePayloadLenient(row.Definition))
	states := asArray(get(def, "states"))
	sd, ok := states.Get(row.CurrentState)
	if !ok || !isArray(sd) {
		_ = tx.Rollback()
		return nil, runtimeError("State machine %d is missing persisted state definition '%s'.", id, row.CurrentState)
	}
	return &lockedMachine{tx: tx, row: row, definition: def, state: asArray(parsePayloadLenient(row.State)),
		stateDef: asArray(sd), currentState: row.CurrentState, status: row.Status}, nil
}

// actionMeta is Worker::state_machine_action_meta.
type actionMeta struct {
	machineID    int64
	stateName    string
	eventName    *string
	eventPayload *phpjson.Object
}

func parseActionMeta(payload string) (actionMeta, bool) {
	p := asArray(parsePayloadLenient(payload))
	id := get(p, "machine_id")
	var m actionMeta
	switch id.Kind() {
	case phpjson.KindNumber:
		m.machineID = phpInt(id, 0)
	case phpjson.KindString: // is_numeric, then (int)
		s, _ := id.AsString()
		if _, err := strconv.ParseFloat(strings.TrimLeft(s, " \t\n\r\v\f"), 64); err != nil {
			return m, false
		}
		m.machineID = phpjson.StringToInt(s)
	default:
		return m, false
	}
	name, ok := get(p, "state_name").AsString()
	if !ok || phpjson.Trim(name) == "" {
		return m, false
	}
	m.stateName = phpjson.Trim(name)
	if ev, ok := get(p, "event_name").AsString(); ok && phpjson.Trim(ev) != "" {
		m.eventName = &ev
	}
	m.eventPayload = asArray(get(p, "event_payload"))
	return m, true
}

// jobRuntime is the worker's runtime metadata for event rows.
type jobRuntime struct {
	jobID   int64
	queue   string
	attempt int
}

// ActionJob is the claimed action job a runtime runs or fails.
type ActionJob struct {
	ID      int64
	Queue   string
	Attempt int
	Payload string
}

// HandleAction is the action job: Worker::process_job's state machine
// branch and StateMachine::handle_action_job.
func (m *Runtime) HandleAction(ctx context.Context, job ActionJob) error {
	meta, ok := parseActionMeta(job.Payload)
	if !ok {
		return runtimeError("State machine action payload is missing required metadata.")
	}
	rt := jobRuntime{jobID: job.ID, queue: job.Queue, attempt: job.Attempt}
	startedAt := time.Now()
	lm, err := m.lock(ctx, meta.machineID)
	if err != nil {
		return err
	}
	if lm.status != machineRunning || lm.currentState != meta.stateName {
		return lm.tx.Commit() // a stale delivery: the machine moved on
	}
	stateBefore := cloneObj(lm.state)
	actionDef := handlerDefOf(lm.stateDef, "action", "action_class")
	var input, actionCtx *phpjson.Object
	var handler *string
	fail := func(cause error) error {
		_ = lm.tx.Rollback()
		if c := context.Cause(ctx); m.handsBack(c) {
			// Not the action's failure: the attempt is handed back (or was
			// taken from us), and the plugin's rows for it are the next run's.
			return c
		}
		m.recordActionFailure(ctx, meta, rt, handler, input, actionCtx, stateBefore, cause, time.Since(startedAt))
		return cause
	}
	if actionDef == nil {
		return fail(runtimeError("State '%s' does not define an action.", meta.stateName))
	}
	class := actionDef.class
	handler = &class
	goAction, isGo := m.h.Action(class)
	caller := m.h.ClassCaller()
	if !isGo && caller == nil {
		_ = lm.tx.Rollback()
		m.log.Warn("state action has no Go implementation and there is no PHP pool; leaving the job to PHP workers", "job", job.ID, "class", class)
		return ErrLeaveToPHP
	}
	input = obj("state", objVal(cloneObj(lm.state)), "event", strOrNull(meta.eventName),
		"event_payload", objVal(meta.eventPayload), "payload", objVal(actionDef.payload))
	actionCtx = obj("action", str(class), "state", str(meta.stateName), "event", strOrNull(meta.eventName))
	if err := lm.tx.Event(ctx, store.MachineEvent{
		MachineID: meta.machineID, JobID: store.Int(rt.jobID), StateName: meta.stateName, Handler: store.String(class),
		Event: "action_started", EventName: nullStr(meta.eventName), Queue: store.String(rt.queue),
		Attempt: store.Int(int64(rt.attempt)), Input: enc(input), Output: enc(meta.eventPayload),
		StateBefore: enc(lm.state), StateAfter: enc(lm.state), Context: enc(actionCtx),
	}); err != nil {
		_ = lm.tx.Rollback()
		return err
	}
	call := Call{MachineID: meta.machineID, StateName: meta.stateName, State: rawObj(lm.state),
		Event: deref(meta.eventName), EventPayload: rawObj(meta.eventPayload), Payload: rawObj(actionDef.payload)}
	var out []byte
	if isGo {
		out, err = callAction(ctx, goAction, call)
	} else {
		out, err = caller.CallClass(ctx, ClassCall{Class: class, Method: "handle",
			Args:            stateArgs(lm.state, meta.eventName, meta.eventPayload, actionDef.payload),
			Contract:        `Queuety\Contracts\StateAction`,
			MissingMessage:  fmt.Sprintf("State action class '%s' could not be loaded.", class),
			ContractMessage: fmt.Sprintf("State action class '%s' must implement Queuety\\Contracts\\StateAction.", class)})
		if err != nil && instantiationFailed(err, class, "action") {
			input, actionCtx = nil, nil // the plugin failed before building the action's input and context
		}
	}
	if err != nil {
		return fail(err)
	}
	result, err := actionResult(out)
	if err != nil {
		return fail(err)
	}
	result.Delete("_queuety_trace")
	state := cloneObj(lm.state)
	transitionPayload := phpjson.NewObject()
	updates := phpjson.NewObject()
	for k, v := range result.All() {
		if k == "_event_payload" && isArray(v) {
			transitionPayload = asArray(v)
			continue
		}
		if !isIntKey(k) && !strings.HasPrefix(k, "_") {
			updates.Set(k, v)
			state.Set(k, v)
		}
	}
	if err := lm.tx.Event(ctx, store.MachineEvent{
		MachineID: meta.machineID, JobID: store.Int(rt.jobID), StateName: meta.stateName, Handler: store.String(class),
		Event: "action_completed", EventName: nullStr(meta.eventName), Queue: store.String(rt.queue),
		Attempt: store.Int(int64(rt.attempt)), Input: enc(input), Output: enc(result),
		StateBefore: enc(stateBefore), StateAfter: enc(state), Context: enc(actionCtx),
		DurationMS: store.Int(time.Since(startedAt).Milliseconds()),
	}); err != nil {
		return fail(err)
	}
	emitted := ""
	if ev, ok := result.Get("_event"); ok && isScalar(ev) {
		emitted = phpjson.Trim(scalarString(ev, ""))
	}
	if emitted != "" {
		if transitionPayload.Len() == 0 {
			transitionPayload = updates
		}
		if err := m.applyTransition(ctx, lm, state, emitted, transitionPayload); err != nil {
			return fail(err)
		}
		return lm.tx.Commit()
	}
	if err := lm.tx.Update(ctx, meta.machineID, store.MachineUpdate{Status: machineWaitingEvent,
		CurrentState: meta.stateName, State: encString(state)}); err != nil {
		return fail(err)
	}
	if err := m.lifecycleEvent(ctx, lm.tx, meta.machineID, meta.stateName, "machine_waiting", nil, state,
		obj("event", strOrNull(meta.eventName))); err != nil {
		return fail(err)
	}
	return lm.tx.Commit()
}

// recordActionFailure writes, after the rollback and outside any lock,
// what handle_action_job's catch writes: the action_started row again
// (the first one went with the rollback) and action_failed.
func (m *Runtime) recordActionFailure(ctx context.Context, meta actionMeta, rt jobRuntime, handler *string,
	input, actionCtx, stateBefore *phpjson.Object, cause error, d time.Duration) {
	ctx = context.WithoutCancel(ctx)
	before := stateBefore
	if before.Len() == 0 {
		before = nil
	}
	if actionCtx == nil {
		actionCtx = phpjson.NewObject()
	}
	if input != nil && input.Len() > 0 {
		if err := m.st.InsertMachineEvent(ctx, store.MachineEvent{
			MachineID: meta.machineID, JobID: store.Int(rt.jobID), StateName: meta.stateName, Handler: nullStr(handler),
			Event: "action_started", EventName: nullStr(meta.eventName), Queue: store.String(rt.queue),
			Attempt: store.Int(int64(rt.attempt)), Input: enc(input), Output: enc(meta.eventPayload),
			StateBefore: enc(before), StateAfter: enc(before), Context: enc(actionCtx),
		}); err != nil {
			m.log.Warn("writing a machine event failed", "machine", meta.machineID, "err", err)
		}
	} else {
		input = nil
	}
	if err := m.st.InsertMachineEvent(ctx, store.MachineEvent{
		MachineID: meta.machineID, JobID: store.Int(rt.jobID), StateName: meta.stateName, Handler: nullStr(handler),
		Event: "action_failed", EventName: nullStr(meta.eventName), Queue: store.String(rt.queue),
		Attempt: store.Int(int64(rt.attempt)), Input: enc(input),
		StateBefore: enc(before), StateAfter: enc(before), Context: enc(actionCtx),
		Error: enc(errorPayload(cause)), DurationMS: store.Int(d.Milliseconds()),
	}); err != nil {
		m.log.Warn("writing a machine event failed", "machine", meta.machineID, "err", err)
	}
}

// failAction is StateMachine::fail_action, once an action job is buried
// (by its last failure, recorded already, or by the stale sweep).
func (m *Runtime) failAction(ctx context.Context, machineID int64, stateName, message string, rt jobRuntime, recorded bool) error {
	lm, err := m.lock(ctx, machineID)
	if err != nil {
		return err
	}
	if lm.status == machineCompleted || lm.status == machineCancelled {
		return lm.tx.Commit()
	}
	if err := lm.tx.Fail(ctx, machineID, stateName, encString(lm.state), m.now(), message); err != nil {
		_ = lm.tx.Rollback()
		return err
	}
	errObj := obj("message", str(message))
	ev := store.MachineEvent{MachineID: machineID, JobID: store.Int(rt.jobID), StateName: stateName,
		Queue: store.String(rt.queue), Attempt: store.Int(int64(rt.attempt)),
		StateBefore: enc(lm.state), StateAfter: enc(lm.state), Error: enc(errObj)}
	if !recorded {
		ev.Event = "action_failed"
		if err := lm.tx.Event(ctx, ev); err != nil {
			_ = lm.tx.Rollback()
			return err
		}
	}
	ev.Event = "machine_failed"
	if err := lm.tx.Event(ctx, ev); err != nil {
		_ = lm.tx.Rollback()
		return err
	}
	return lm.tx.Commit()
}

// FailParams are a buried action job's, for FailAction.
type FailParams struct {
	Job ActionJob
	// Message is the machine's error_message.
	Message string
	// Recorded: the job's last failure wrote its action_failed row
	// already (a worker's burial); the stale sweep's burial did not.
	Recorded bool
}

// FailAction is StateMachine::fail_action for a buried action job: its
// machine marked failed, with action_failed (unless recorded) and
// machine_failed rows. It returns the machine's id; ok is false, and
// nothing is done, when the job's payload names no machine.
func (m *Runtime) FailAction(ctx context.Context, p *FailParams) (machineID int64, ok bool, err error) {
	meta, ok := parseActionMeta(p.Job.Payload)
	if !ok {
		return 0, false, nil
	}
	rt := jobRuntime{jobID: p.Job.ID, queue: p.Job.Queue, attempt: p.Job.Attempt}
	return meta.machineID, true, m.failAction(ctx, meta.machineID, meta.stateName, p.Message, rt, p.Recorded)
}

// handsBack is whether cause ends an action without failing it.
func (m *Runtime) handsBack(cause error) bool {
	for _, e := range m.handBack {
		if errors.Is(cause, e) {
			return true
		}
	}
	return false
}

// lifecycleEvent is record_lifecycle_state_event.
func (m *Runtime) lifecycleEvent(ctx context.Context, tx *store.MachineTx, id int64, stateName, event string,
	eventName *string, state, output *phpjson.Object) error {
	return tx.Event(ctx, store.MachineEvent{MachineID: id, StateName: stateName, Event: event,
		EventName: nullStr(eventName), Input: enc(output), Output: enc(output), StateBefore: enc(state),
		StateAfter: enc(state), Context: enc(obj("state", str(stateName), "event", strOrNull(eventName)))})
}

// errorPayload is StateMachine::error_payload.
func errorPayload(err error) *phpjson.Object {
	return obj("message", str(err.Error()), "class", str(throwable.Class(err)), "trace", str(throwable.Trace(err)))
}

// instantiationFailed tells whether a pool error is the plugin's
// instantiate_action/instantiate_guard failure (before the call).
func instantiationFailed(err error, class, what string) bool {
	msg := err.Error()
	return msg == fmt.Sprintf("State %s class '%s' could not be loaded.", what, class) ||
		strings.HasPrefix(msg, fmt.Sprintf("State %s class '%s' must implement ", what, class))
}

// actionResult is the action's return: an array, or a string meaning
// {"_event": string}.
func actionResult(out []byte) (*phpjson.Object, error) {
	v, err := phpjson.Decode(out)
	if err != nil {
		return nil, fmt.Errorf("state action returned invalid JSON: %w", err)
	}
	if s, ok := v.AsString(); ok {
		return obj("_event", str(s)), nil
	}
	if !isArray(v) {
		return nil, &phpError{class: "TypeError", msg: fmt.Sprintf("State action must return an array or a string, %s returned.", v.Kind())}
	}
	return asArray(v), nil
}

func callAction(ctx context.Context, fn Action, c Call) (out []byte, err error) {
	defer throwable.Catch(&err)
	return fn(ctx, c)
}

// stateArgs are handle()'s (state, event, event_payload, payload).
func stateArgs(state *phpjson.Object, event *string, eventPayload, payload *phpjson.Object) []byte {
	b, _ := phpjson.Encode(phpjson.List(objVal(state), strOrNull(event), objVal(eventPayload), objVal(payload)))
	return b
}

func rawObj(o *phpjson.Object) []byte {
	b, _ := phpjson.Encode(objVal(o))
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func isScalar(v phpjson.Value) bool {
	switch v.Kind() {
	case phpjson.KindString, phpjson.KindNumber, phpjson.KindBool:
		return true
	}
	return false
}

// isIntKey is whether PHP stores the key as an int (canonical decimal).
func isIntKey(k string) bool {
	if k == "" || len(k) > 19 {
		return false
	}
	s := strings.TrimPrefix(k, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) || (k[0] == '-' && s == "0") {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
