package steps

import (
	"context"
	"slices"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Signals (spec §6): a signal is a row of the signals table, stored
// whether or not anything waits for it and never consumed; a
// wait_for_signal step (builder: WaitForSignal, the approval, decision and
// input helpers) is satisfied by the stored rows whose payload matches
// (match_payload subset, correlation key). Engine.Signal stores one and
// asks the current step's kind (Wake, WakeSignal).
type waitForSignal struct{}

func (waitForSignal) Type() workflow.StepType { return workflow.StepWaitForSignal }

func (waitForSignal) Placeholder() string { return workflow.HandlerWaitForSignal }

// Admit runs every claimed job.
func (waitForSignal) Admit(context.Context, *engine.AdmitParams) engine.Admission {
	return engine.Admission{}
}

func (waitForSignal) WaitType() string { return "signal" }

// RunPlaceholder runs __queuety_wait_for_signal as the worker does
// (runWaitPlaceholder), evaluating handle_signal_step.
func (waitForSignal) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	_, err := runWaitPlaceholder(ctx, r, workflow.StepWaitForSignal, workflow.StatusWaitingForSignal, evaluateSignalWait)
	return err
}

// Wake settles the parked step, on a stored signal, when it waits for
// its name ("" = any of its names) and the stored signals now satisfy
// it. The step waits on no other workflow.
func (waitForSignal) Wake(ctx context.Context, a *engine.Advance, w *engine.Wake) (bool, error) {
	if w.Cause != engine.WakeSignal {
		return false, nil
	}
	def := signalDef(w.Step)
	if w.Signal != "" && !slices.Contains(def.SignalNames, w.Signal) {
		return true, nil
	}
	matched, err := signalPayloads(a, def)
	if err != nil || matched == nil {
		return true, err
	}
	return true, a.SettleWait(ctx, a.Current(), signalStepOutput(def, matched))
}

// WaitDetails is the status API's signal_wait_details.
func (waitForSignal) WaitDetails(ctx context.Context, p *engine.WaitDetailsParams) (*phpjson.Object, error) {
	return signalWaitDetails(ctx, p.Engine, p.WorkflowID, p.Step, p.State)
}

// signalDef is the step's typed definition.
func signalDef(step workflow.Step) *workflow.WaitForSignalStep {
	d, _ := step.Definition()
	return d.(*workflow.WaitForSignalStep)
}

// evaluateSignalWait is enqueue_signal_step's evaluation at the
// placeholder: settle when the stored signals satisfy the step, else park
// in waiting_for_signal.
func evaluateSignalWait(ctx context.Context, a *engine.Advance, index int, step workflow.Step) error {
	def := signalDef(step)
	matched, err := signalPayloads(a, def)
	if err != nil {
		return err
	}
	if matched != nil {
		return a.SettleWait(ctx, index, signalStepOutput(def, matched))
	}
	names := make([]phpjson.Value, len(def.SignalNames))
	for i, n := range def.SignalNames {
		names[i] = phpjson.String(n)
	}
	match := phpjson.ObjectValue(phpjson.AsArray(field(step, "match_payload")))
	details := phpjson.NewObject().
		Set("step_name", field(step, "name")).
		Set("human_wait", field(step, "human_wait")).
		Set("match_payload", match).
		Set("correlation_key", phpjson.NullIfEmpty(def.CorrelationKey))
	output := phpjson.NewObject().
		Set("wait_mode", phpjson.String(string(def.Mode))).
		Set("step_name", field(step, "name")).
		Set("human_wait", field(step, "human_wait")).
		Set("result_key", phpjson.NullIfEmpty(def.ResultKey)).
		Set("match_payload", match).
		Set("correlation_key", phpjson.NullIfEmpty(def.CorrelationKey))
	return a.Park(ctx, &engine.ParkParams{Index: index, Step: step, WaitType: "signal", Status: store.StatusWaitingForSignal,
		Handler: workflow.HandlerWaitForSignal, WaitingFor: names, Mode: def.Mode, ResultKey: def.ResultKey, Details: details, Output: output})
}

// signalPayloads is resolve_signal_wait_payloads: the first matching
// payload of each name, oldest first. Any ⇒ the first matching row
// overall; All ⇒ every name, in the configured order. nil when the wait
// is not satisfied.
func signalPayloads(a *engine.Advance, def *workflow.WaitForSignalStep) (*phpjson.Object, error) {
	if len(def.SignalNames) == 0 {
		return nil, nil
	}
	rows, err := a.Tx().Signals(a.Workflow().ID, def.SignalNames)
	if err != nil {
		return nil, err
	}
	first := phpjson.NewObject()
	firstName, firstData := "", phpjson.Null()
	for _, r := range rows {
		payload := phpjson.NewObject()
		if v, err := phpjson.DecodeString(r.Payload); err == nil && phpjson.IsArray(v) {
			payload = phpjson.AsArray(v)
		}
		if !signalWaitMatches(payload, a.State(), def) {
			continue
		}
		if firstData.IsNull() {
			firstName, firstData = r.Name, phpjson.ObjectValue(payload)
		}
		if _, seen := first.Get(r.Name); !seen {
			first.Set(r.Name, phpjson.ObjectValue(payload))
		}
	}
	if def.Mode == workflow.WaitAny {
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
func signalWaitMatches(payload *phpjson.Object, state *workflow.State, def *workflow.WaitForSignalStep) bool {
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
	eq, err := phpjson.ValuesEqual(pv, sv)
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
		if phpjson.IsArray(expected) {
			if !phpjson.IsArray(actual) || !payloadContainsSubset(phpjson.AsArray(actual), phpjson.AsArray(expected)) {
				return false
			}
			continue
		}
		if eq, err := phpjson.ValuesEqual(actual, expected); err != nil || !eq {
			return false
		}
	}
	return true
}

// signalStepOutput is signal_step_output.
func signalStepOutput(def *workflow.WaitForSignalStep, matched *phpjson.Object) *phpjson.Object {
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
		for k, v := range phpjson.AsArray(payload).All() {
			if !workflow.IsReserved(k) {
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
		for k, val := range phpjson.AsArray(v).All() {
			if !workflow.IsReserved(k) {
				out.Set(k, val)
			}
		}
	}
	return out
}

// signalWaitDetails is signal_wait_details: which of the step's signal
// names have a matching signal row (match_payload subset, correlation key)
// and which remain.
func signalWaitDetails(ctx context.Context, e *engine.Engine, workflowID int64, step workflow.Step, state *workflow.State) (*phpjson.Object, error) {
	def := signalDef(step)
	signals, err := e.Store().SignalsOf(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	var matched []string
	for _, sig := range signals {
		if !slices.Contains(def.SignalNames, sig.Name) || slices.Contains(matched, sig.Name) {
			continue
		}
		payload, err := phpjson.DecodeString(sig.Payload)
		if err != nil || !phpjson.IsArray(payload) {
			payload = phpjson.List()
		}
		if signalWaitMatches(phpjson.AsArray(payload), state, def) {
			matched = append(matched, sig.Name)
		}
	}
	remaining := []string{}
	for _, n := range def.SignalNames {
		if !slices.Contains(matched, n) {
			remaining = append(remaining, n)
		}
	}
	out := phpjson.NewObject()
	phpjson.SetUnlessNull(out, "step_name", field(step, "name"))
	phpjson.SetUnlessNull(out, "result_key", phpjson.NullIfEmpty(phpjson.Trim(phpjson.OptionalString(field(step, "result_key")))))
	phpjson.SetUnlessNull(out, "human_wait", field(step, "human_wait"))
	out.Set("match_payload", phpjson.ObjectValue(def.MatchPayload))
	out.Set("matched", phpjson.Strings(matched))
	out.Set("remaining", phpjson.Strings(remaining))
	if def.CorrelationKey != "" {
		out.Set("correlation_key", phpjson.String(def.CorrelationKey))
		phpjson.SetUnlessNull(out, "correlation_value", stateField(state, def.CorrelationKey))
	}
	return out, nil
}
