package workflow

import (
	"context"
	"slices"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// Signals (spec §6): a signal is a row of the signals table, stored
// whether or not anything waits for it and never consumed; a
// wait_for_signal step is satisfied by the stored rows whose payload
// matches (match_payload subset, correlation key).

// Signal is Queuety::signal (Workflow::handle_signal): it stores the
// signal and, in the same transaction, settles the workflow's current
// wait_for_signal step when the workflow waits for this name and the
// stored signals now satisfy it; then what waited on the workflow is woken
// if it completed. A missing workflow is not an error (the row is still
// stored). A nil payload is stored as [].
func (e *Engine) Signal(ctx context.Context, workflowID int64, name string, payload *phpjson.Object) error {
	if payload == nil {
		payload = phpjson.NewObject()
	}
	data, err := encodeObject(payload)
	if err != nil {
		return err
	}
	var a *advanceTx
	err = e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		a = &advanceTx{ctx: ctx, e: e, tx: tx, trace: &jobTrace{consumed: true}}
		if err := tx.InsertSignal(workflowID, name, data); err != nil {
			return err
		}
		return a.resumeSignalWait(workflowID, name)
	})
	if err != nil {
		return err
	}
	return e.afterCommit(ctx, a)
}

// ResumeSignalWait re-evaluates a workflow parked in waiting_for_signal
// against its stored signals and settles the wait when they satisfy it. It
// is what the signal poller runs for signals another process (PHP's
// bridge, plain SQL) inserted without evaluating the wait. It reports
// whether the wait settled. When settling would break a budget the
// workflow fails (Signal returns the violation instead, as PHP throws it).
func (e *Engine) ResumeSignalWait(ctx context.Context, workflowID int64) (bool, error) {
	var a *advanceTx
	settled := false
	err := e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		a = &advanceTx{ctx: ctx, e: e, tx: tx, trace: &jobTrace{consumed: true}}
		if err := a.resumeSignalWait(workflowID, ""); err != nil {
			return err
		}
		settled = a.settled
		return nil
	})
	if IsConstraintViolation(err) {
		terminal, ferr := e.failForViolation(ctx, workflowID, err)
		e.afterTerminal(ctx, terminal...)
		return true, ferr
	}
	if err != nil {
		return false, err
	}
	return settled, e.afterCommit(ctx, a)
}

// resumeSignalWait is the part of handle_signal after the insert: lock the
// workflow; when it is waiting_for_signal at a wait_for_signal step whose
// names include name ("" = any of them), settle it if the stored signals
// satisfy it.
func (a *advanceTx) resumeSignalWait(workflowID int64, name string) error {
	var err error
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
		return err
	}
	if a.wf.Status != string(StatusWaitingForSignal) {
		return nil
	}
	if err := a.loadState(); err != nil {
		return err
	}
	step, ok := a.step(a.current)
	if !ok || step.IsLegacy() || toString(step.field("type")) != string(StepWaitForSignal) {
		return nil
	}
	def := step.waitForSignalDef(StepCommon{})
	if name != "" && !slices.Contains(def.SignalNames, name) {
		return nil
	}
	matched, err := a.signalPayloads(def)
	if err != nil || matched == nil {
		return err
	}
	return a.settleWait(a.current, signalStepOutput(def, matched))
}

// evaluateSignalWait is enqueue_signal_step's evaluation at the
// placeholder: settle when the stored signals satisfy the step, else park
// in waiting_for_signal.
func (a *advanceTx) evaluateSignalWait(index int, step Step, _ bool) error {
	def := step.waitForSignalDef(StepCommon{})
	matched, err := a.signalPayloads(def)
	if err != nil {
		return err
	}
	if matched != nil {
		return a.settleWait(index, signalStepOutput(def, matched))
	}
	names := make([]phpjson.Value, len(def.SignalNames))
	for i, n := range def.SignalNames {
		names[i] = phpjson.String(n)
	}
	match := phpjson.ObjectValue(phpArray(rawField(step, "match_payload")))
	details := phpjson.NewObject().
		Set("step_name", rawField(step, "name")).
		Set("human_wait", rawField(step, "human_wait")).
		Set("match_payload", match).
		Set("correlation_key", optionalValue(def.CorrelationKey))
	output := phpjson.NewObject().
		Set("wait_mode", phpjson.String(string(def.Mode))).
		Set("step_name", rawField(step, "name")).
		Set("human_wait", rawField(step, "human_wait")).
		Set("result_key", optionalValue(def.ResultKey)).
		Set("match_payload", match).
		Set("correlation_key", optionalValue(def.CorrelationKey))
	return a.park(index, step, "signal", store.StatusWaitingForSignal, HandlerWaitForSignal,
		names, def.Mode, def.ResultKey, details, output)
}

// signalPayloads is resolve_signal_wait_payloads: the first matching
// payload of each name, oldest first. Any ⇒ the first matching row
// overall; All ⇒ every name, in the configured order. nil when the wait
// is not satisfied.
func (a *advanceTx) signalPayloads(def *WaitForSignalStep) (*phpjson.Object, error) {
	if len(def.SignalNames) == 0 {
		return nil, nil
	}
	rows, err := a.tx.Signals(a.wf.ID, def.SignalNames)
	if err != nil {
		return nil, err
	}
	first := phpjson.NewObject()
	firstName, firstData := "", phpjson.Null()
	for _, r := range rows {
		payload := phpjson.NewObject()
		if v, err := phpjson.DecodeString(r.Payload); err == nil && isArray(v) {
			payload = phpArray(v)
		}
		if !signalWaitMatches(payload, a.state, def) {
			continue
		}
		if firstData.IsNull() {
			firstName, firstData = r.Name, phpjson.ObjectValue(payload)
		}
		if _, seen := first.Get(r.Name); !seen {
			first.Set(r.Name, phpjson.ObjectValue(payload))
		}
	}
	if def.Mode == WaitAny {
		if firstData.IsNull() {
			return nil, nil
		}
		return phpjson.NewObject().Set(firstName, firstData), nil
	}
	ordered := phpjson.NewObject()
	for _, n := range def.SignalNames {
		v, ok := first.Get(n)
		if !ok {
			return nil, nil
		}
		ordered.Set(n, v)
	}
	return ordered, nil
}

// signalWaitMatches is signal_payload_matches.
func signalWaitMatches(payload *phpjson.Object, state *State, def *WaitForSignalStep) bool {
	if def.MatchPayload != nil && def.MatchPayload.Len() > 0 && !payloadContainsSubset(payload, def.MatchPayload) {
		return false
	}
	if def.CorrelationKey == "" {
		return true
	}
	pv, inPayload := payload.Get(def.CorrelationKey)
	sv, inState := state.Get(def.CorrelationKey)
	if !inPayload || !inState {
		return false
	}
	eq, err := valuesEqual(pv, sv)
	return err == nil && eq
}

// payloadContainsSubset is payload_contains_subset: every key of subset is
// in payload; arrays recurse, leaves compare canonically.
func payloadContainsSubset(payload, subset *phpjson.Object) bool {
	for k, expected := range subset.All() {
		actual, ok := payload.Get(k)
		if !ok {
			return false
		}
		if isArray(expected) {
			if !isArray(actual) || !payloadContainsSubset(phpArray(actual), phpArray(expected)) {
				return false
			}
			continue
		}
		if eq, err := valuesEqual(actual, expected); err != nil || !eq {
			return false
		}
	}
	return true
}

// signalStepOutput is signal_step_output.
func signalStepOutput(def *WaitForSignalStep, matched *phpjson.Object) *phpjson.Object {
	m := phpjson.NewObject()
	for k, v := range matched.All() {
		if slices.Contains(def.SignalNames, k) {
			m.Set(k, v)
		}
	}
	out := phpjson.NewObject()
	if def.DecisionMap != nil && def.DecisionMap.Len() > 0 {
		selected, payload := phpjson.Null(), phpjson.ObjectValue(phpjson.NewObject())
		outcome := phpjson.Null()
		if keys := m.Keys(); len(keys) > 0 {
			selected = phpjson.String(keys[0])
			payload, _ = m.Get(keys[0])
			outcome = selected
			if o, ok := def.DecisionMap.Get(keys[0]); ok && !o.IsNull() {
				outcome = o
			}
		}
		decision := phpjson.NewObject().Set("outcome", outcome).Set("signal", selected).Set("data", payload)
		if def.ResultKey != "" {
			return out.Set(def.ResultKey, phpjson.ObjectValue(decision))
		}
		if !outcome.IsNull() {
			out.Set("decision_outcome", outcome)
		}
		if !selected.IsNull() {
			out.Set("decision_signal", selected)
		}
		for k, v := range phpArray(payload).All() {
			if !IsReserved(k) {
				out.Set(k, v)
			}
		}
		return out
	}
	if def.ResultKey != "" {
		if len(def.SignalNames) == 1 {
			v, ok := m.Get(def.SignalNames[0])
			if !ok {
				v = phpjson.ObjectValue(phpjson.NewObject())
			}
			return out.Set(def.ResultKey, v)
		}
		collected := phpjson.NewObject()
		for _, n := range def.SignalNames {
			if v, ok := m.Get(n); ok {
				collected.Set(n, v)
			}
		}
		return out.Set(def.ResultKey, phpjson.ObjectValue(collected))
	}
	for _, n := range def.SignalNames {
		v, ok := m.Get(n)
		if !ok {
			continue
		}
		for k, val := range phpArray(v).All() {
			if !IsReserved(k) {
				out.Set(k, val)
			}
		}
	}
	return out
}
