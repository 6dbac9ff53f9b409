package engine

import (
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// State writes of the advance transaction, in PHP's shapes (spec §3.3,
// §3.5, §3.6, §3.8).

// stripTrace returns the output without _queuety_trace
// (extract_trace_from_step_output; the trace payload itself is not used).
func stripTrace(out *phpjson.Object) *phpjson.Object {
	if out == nil {
		return phpjson.NewObject()
	}
	if _, ok := out.Get(workflow.KeyQueuetyTrace); !ok {
		return out
	}
	c := phpjson.CloneObject(out)
	c.Delete(workflow.KeyQueuetyTrace)
	return c
}

// mergeOutput is merge_step_output_into_state: public keys overwrite
// top-level state keys (shallow), _workflow_groups and _repeat_steps
// (arrays) replace the state's copy, other "_" keys are dropped; then
// the pruning bookkeeping.
func mergeOutput(s *workflow.State, out *phpjson.Object, currentStep int) {
	var written []phpjson.Value
	for k, v := range out.All() {
		if (k == workflow.KeyWorkflowGroups || k == workflow.KeyRepeatSteps) && phpjson.IsArray(v) {
			s.Set(k, v)
			continue
		}
		if !workflow.IsReserved(k) {
			s.Set(k, v)
			written = append(written, phpjson.String(k))
		}
	}
	prune, hasPrune := s.Get(workflow.KeyPruneStateAfter)
	outputs, _ := s.Get(workflow.KeyStepOutputs)
	if !hasPrune || prune.IsNull() || !phpjson.IsArray(outputs) {
		return
	}
	stepOutputs := phpjson.CloneObject(phpjson.AsArray(outputs))
	stepOutputs.Set(strconv.Itoa(currentStep), phpjson.List(written...))
	after := phpjson.ToInt(prune)
	if int64(currentStep) >= after {
		cutoff := int64(currentStep) - after
		for _, k := range stepOutputs.Keys() {
			if phpjson.StringToInt(k) > cutoff {
				continue
			}
			v, _ := stepOutputs.Get(k)
			if phpjson.IsArray(v) {
				for _, key := range phpjson.Values(v) {
					name, ok := key.AsString()
					if !ok || workflow.IsReserved(name) {
						continue
					}
					// isset(): a null value is not removed.
					if cur, present := s.Get(name); present && !cur.IsNull() {
						s.Delete(name)
					}
				}
			}
			stepOutputs.Delete(k)
		}
	}
	s.Set(workflow.KeyStepOutputs, phpjson.ObjectValue(stepOutputs))
}

// pushCompensation is push_compensation_snapshot: after a step with a
// compensation settles, its handler, payload and the public state are
// pushed on _compensation_stack.
func pushCompensation(s *workflow.State, step workflow.Step, ok bool, index int) {
	if !ok || step.IsLegacy() || step.Object() == nil {
		return
	}
	ref, has := step.Compensation()
	if !has {
		return
	}
	stack := phpjson.Values(phpjson.Get(s.Object(), workflow.KeyCompensationStack))
	entry := phpjson.NewObject()
	entry.Set("step_index", phpjson.Int(int64(index)))
	entry.Set("handler", phpjson.String(ref.Class))
	entry.Set("payload", phpjson.ObjectValue(ref.Payload))
	entry.Set("state", phpjson.ObjectValue(s.Public()))
	stack = append(append([]phpjson.Value(nil), stack...), phpjson.ObjectValue(entry))
	s.Set(workflow.KeyCompensationStack, phpjson.List(stack...))
}

// bumpCounter adds n to one _workflow_counters entry, only when a budget
// is configured (increment_* in PHP).
func bumpCounter(s *workflow.State, key string, n int64) {
	if n < 1 || s.WorkflowBudget().IsZero() {
		return
	}
	counters := phpjson.CloneObject(phpjson.AsArray(phpjson.Get(s.Object(), workflow.KeyWorkflowCounters)))
	counters.Set(key, phpjson.Int(phpjson.ToInt(phpjson.Get(counters, key))+n))
	s.Set(workflow.KeyWorkflowCounters, phpjson.ObjectValue(counters))
}

// publicSize is strlen(json_encode(public_state)).
func publicSize(s *workflow.State) (int64, error) {
	b, err := encodeObject(s.Public())
	return int64(len(b)), err
}

// assertBudget is assert_workflow_budget.
func assertBudget(s *workflow.State) error {
	b := s.WorkflowBudget()
	if b.IsZero() {
		return nil
	}
	c := s.WorkflowCounters()
	if b.MaxTransitions > 0 && c.Transitions > b.MaxTransitions {
		return &workflow.ConstraintViolation{Message: fmt.Sprintf("Workflow exceeded max_transitions budget of %d.", b.MaxTransitions)}
	}
	size, err := publicSize(s)
	if err != nil {
		return err
	}
	if b.MaxStateBytes > 0 && size > b.MaxStateBytes {
		return &workflow.ConstraintViolation{Message: fmt.Sprintf("Workflow exceeded max_state_bytes budget of %d.", b.MaxStateBytes)}
	}
	if b.MaxCostUnits > 0 && c.CostUnits > b.MaxCostUnits {
		return &workflow.ConstraintViolation{Message: fmt.Sprintf("Workflow exceeded max_cost_units budget of %d.", b.MaxCostUnits)}
	}
	if b.MaxStartedWorkflows > 0 && c.StartedWorkflows > b.MaxStartedWorkflows {
		return &workflow.ConstraintViolation{Message: fmt.Sprintf("Workflow exceeded max_started_workflows budget of %d.", b.MaxStartedWorkflows)}
	}
	return nil
}

// budgetDelta reads _workflow_budget_delta.started_workflows from output.
func budgetDelta(out *phpjson.Object) int64 {
	d := phpjson.Get(out, workflow.KeyWorkflowBudgetDelta)
	if !phpjson.IsArray(d) {
		return 0
	}
	return max(0, phpjson.ToInt(phpjson.Get(phpjson.AsArray(d), "started_workflows")))
}

// PushCompensation records step's compensation, if any, as settled at
// index (push_compensation_snapshot).
func PushCompensation(s *workflow.State, step workflow.Step, index int) {
	pushCompensation(s, step, true, index)
}

// BumpCounter adds n to the budget counter key, when a budget is set.
func BumpCounter(s *workflow.State, key string, n int64) { bumpCounter(s, key, n) }

// AssertBudget is assert_workflow_budget: a ConstraintViolation when the
// workflow's budget is exceeded.
func AssertBudget(s *workflow.State) error { return assertBudget(s) }
