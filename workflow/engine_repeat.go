package workflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// repeatOutput is handle_repeat_step: continue ⇒ {"_next_step": target,
// "_repeat_steps": {... "<i>": {"iterations": n+1}}}; stop ⇒ the
// unchanged _repeat_steps. n+1 > max_iterations is a constraint violation.
func (e *Engine) repeatOutput(ctx context.Context, workflowID int64, state *State, index int) (*phpjson.Object, error) {
	step, ok := state.Step(index)
	if !ok || step.IsLegacy() || toString(step.field("type")) != string(StepRepeat) {
		return nil, runtimeErrorf("Workflow repeat step %d is missing or invalid.", index)
	}
	target := phpTrim(toString(step.field("target_step")))
	stateKey := phpTrim(toString(step.field("state_key")))
	if target == "" {
		return nil, runtimeErrorf("Workflow %d: repeat step %d is missing a target step.", workflowID, index)
	}
	cond, hasCond := ParseHandlerRef(step.field("condition"))
	if !hasCond {
		cond, hasCond = ParseHandlerRef(step.field("condition_class"))
	}
	if stateKey == "" && !hasCond {
		return nil, runtimeErrorf("Workflow %d: repeat step %d is missing a state key.", workflowID, index)
	}

	var matches bool
	if hasCond {
		fn, ok := e.lookupCondition(cond.Class)
		if !ok {
			return nil, runtimeErrorf("Repeat condition class '%s' not found.", cond.Class)
		}
		var err error
		if matches, err = fn(ctx, state.Public(), cond.Payload); err != nil {
			return nil, err
		}
	} else {
		expected, present := step.Get("expected")
		if !present || expected.IsNull() {
			expected = phpjson.Bool(true)
		}
		actual := state.field(stateKey)
		var err error
		if matches, err = valuesEqual(actual, expected); err != nil {
			return nil, err
		}
	}
	var cont bool
	switch mode := toString(step.field("repeat_mode")); mode {
	case "while", "":
		cont = matches
		if mode == "" && !step.field("repeat_mode").IsNull() {
			return nil, runtimeErrorf("Unsupported repeat mode '%s'.", mode)
		}
	case "until":
		cont = !matches
	default:
		return nil, runtimeErrorf("Unsupported repeat mode '%s'.", mode)
	}

	n := state.RepeatIterations(index)
	out := phpjson.NewObject()
	if !cont {
		out.Set(KeyRepeatSteps, repeatStepsValue(state, index, n))
		return out, nil
	}
	if v, present := step.Get("max_iterations"); present && !v.IsNull() && n+1 > toInt(v) {
		name := itoa(index)
		if nv, ok := step.Get("name"); ok && !nv.IsNull() {
			name = toString(nv)
		}
		return nil, &ConstraintViolation{fmt.Sprintf("Workflow %d: repeat step '%s' exceeded max_iterations of %d.", workflowID, name, toInt(v))}
	}
	out.Set(KeyNextStep, phpjson.String(target))
	out.Set(KeyRepeatSteps, repeatStepsValue(state, index, n+1))
	return out, nil
}

// repeatStepsValue is repeat_steps_state: every array entry rewritten as
// {"iterations": n}, this step's set.
func repeatStepsValue(state *State, index int, iterations int64) phpjson.Value {
	out := phpjson.NewObject()
	for k, v := range phpArray(state.field(KeyRepeatSteps)).All() {
		if !isArray(v) {
			continue
		}
		e := phpjson.NewObject().Set("iterations", phpjson.Int(max(0, toInt(get(phpArray(v), "iterations")))))
		out.Set(k, phpjson.ObjectValue(e))
	}
	out.Set(itoa(index), phpjson.ObjectValue(phpjson.NewObject().Set("iterations", phpjson.Int(max(0, iterations)))))
	return phpjson.ObjectValue(out)
}

// valuesEqual compares canonical JSON encodings (values_equal): objects
// with their keys sorted, lists in order.
func valuesEqual(a, b phpjson.Value) (bool, error) {
	ea, err := phpjson.Encode(canonical(a))
	if err != nil {
		return false, err
	}
	eb, err := phpjson.Encode(canonical(b))
	if err != nil {
		return false, err
	}
	return string(ea) == string(eb), nil
}

func canonical(v phpjson.Value) phpjson.Value {
	if !isArray(v) {
		return v
	}
	o := phpArray(v)
	if l, ok := v.AsList(); ok {
		out := make([]phpjson.Value, len(l))
		for i, e := range l {
			out[i] = canonical(e)
		}
		return phpjson.List(out...)
	}
	keys := o.Keys()
	slices.SortFunc(keys, ksortCompare)
	out := phpjson.NewObject()
	for _, k := range keys {
		out.Set(k, canonical(get(o, k)))
	}
	return phpjson.ObjectValue(out)
}

// ksortCompare orders PHP array keys as ksort does for int and string keys.
func ksortCompare(a, b string) int {
	ai, bi := isPHPIntKey(a), isPHPIntKey(b)
	if ai && bi {
		x, y := stringToInt(a), stringToInt(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
