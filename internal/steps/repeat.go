package steps

import (
	"context"
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// repeat is a repeat step (builder: RepeatWhile, RepeatUntil): its
// placeholder jumps back to the target step while (or until) the state key
// or condition matches, counting iterations in _repeat_steps.
type repeat struct{}

func (repeat) Type() workflow.StepType { return workflow.StepRepeat }

func (repeat) Placeholder() string { return workflow.HandlerRepeat }

// Admit gives a step whose condition only PHP can evaluate back, with
// nothing written, for PHP workers to take (engine_php_terminal.go).
func (repeat) Admit(ctx context.Context, p *engine.AdmitParams) engine.Admission {
	if classes := repeatNeedsPHP(p.Engine, p.State, int(p.Job.StepIndex.Int64)); len(classes) > 0 {
		return engine.Admission{Refuse: p.Engine.LeaveToPHP(ctx, p.Job.WorkflowID.Int64, "repeat", classes)}
	}
	return engine.Admission{}
}

func (repeat) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	out, err := repeatOutput(ctx, r.Engine(), r.WorkflowID(), r.State(), r.Index())
	if err != nil {
		return err
	}
	return r.Advance(ctx, out, r.Elapsed())
}

// repeatOutput is handle_repeat_step: continue ⇒ {"_next_step": target,
// "_repeat_steps": {... "<i>": {"iterations": n+1}}}; stop ⇒ the
// unchanged _repeat_steps. n+1 > max_iterations is a constraint violation.
func repeatOutput(ctx context.Context, e *engine.Engine, workflowID int64, state *workflow.State, index int) (*phpjson.Object, error) {
	step, ok := state.Step(index)
	if !ok || step.IsLegacy() || phpjson.ToString(field(step, "type")) != string(workflow.StepRepeat) {
		return nil, runtimeErrorf("Workflow repeat step %d is missing or invalid.", index)
	}
	target := phpjson.Trim(phpjson.ToString(field(step, "target_step")))
	stateKey := phpjson.Trim(phpjson.ToString(field(step, "state_key")))
	if target == "" {
		return nil, runtimeErrorf("Workflow %d: repeat step %d is missing a target step.", workflowID, index)
	}
	cond, hasCond := workflow.ParseHandlerRef(field(step, "condition"))
	if !hasCond {
		cond, hasCond = workflow.ParseHandlerRef(field(step, "condition_class"))
	}
	if stateKey == "" && !hasCond {
		return nil, runtimeErrorf("Workflow %d: repeat step %d is missing a state key.", workflowID, index)
	}

	var matches bool
	if hasCond {
		fn, ok := e.LookupCondition(cond.Class)
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
		actual := stateField(state, stateKey)
		var err error
		if matches, err = phpjson.ValuesEqual(actual, expected); err != nil {
			return nil, err
		}
	}
	var cont bool
	switch mode := phpjson.ToString(field(step, "repeat_mode")); mode {
	case "while", "":
		cont = matches
		if mode == "" && !field(step, "repeat_mode").IsNull() {
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
		out.Set(workflow.KeyRepeatSteps, repeatStepsValue(state, index, n))
		return out, nil
	}
	if v, present := step.Get("max_iterations"); present && !v.IsNull() && n+1 > phpjson.ToInt(v) {
		name := strconv.Itoa(index)
		if nv, ok := step.Get("name"); ok && !nv.IsNull() {
			name = phpjson.ToString(nv)
		}
		return nil, &workflow.ConstraintViolation{Message: fmt.Sprintf("Workflow %d: repeat step '%s' exceeded max_iterations of %d.", workflowID, name, phpjson.ToInt(v))}
	}
	out.Set(workflow.KeyNextStep, phpjson.String(target))
	out.Set(workflow.KeyRepeatSteps, repeatStepsValue(state, index, n+1))
	return out, nil
}

// repeatStepsValue is repeat_steps_state: every array entry rewritten as
// {"iterations": n}, this step's set.
func repeatStepsValue(state *workflow.State, index int, iterations int64) phpjson.Value {
	out := phpjson.NewObject()
	for k, v := range phpjson.AsArray(stateField(state, workflow.KeyRepeatSteps)).All() {
		if !phpjson.IsArray(v) {
			continue
		}
		e := phpjson.NewObject().Set("iterations", phpjson.Int(max(0, phpjson.ToInt(phpjson.Get(phpjson.AsArray(v), "iterations")))))
		out.Set(k, phpjson.ObjectValue(e))
	}
	out.Set(strconv.Itoa(index), phpjson.ObjectValue(phpjson.NewObject().Set("iterations", phpjson.Int(max(0, iterations)))))
	return phpjson.ObjectValue(out)
}

// repeatNeedsPHP is the condition class of a __queuety_repeat step that
// only PHP can evaluate (no Go condition, no CallableRunner), or nil.
func repeatNeedsPHP(e *engine.Engine, state *workflow.State, index int) []string {
	if e.RunsPHPCallables() {
		return nil
	}
	step, ok := state.Step(index)
	if !ok || step.IsLegacy() {
		return nil
	}
	cond, has := workflow.ParseHandlerRef(field(step, "condition"))
	if !has {
		cond, has = workflow.ParseHandlerRef(field(step, "condition_class"))
	}
	if !has || cond.Class == "" {
		return nil
	}
	if _, ok := e.Handlers().LookupCondition(cond.Class); ok {
		return nil
	}
	return []string{cond.Class}
}
