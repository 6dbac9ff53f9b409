package workflow

import (
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Accessors for the reserved keys dispatch writes. Each reads the key the
// way the PHP runtime does, defaults included, so the daemon takes the
// same decisions from the same row.

// Queue is the workflow's default queue (_queue; "default" when missing or
// empty).
func (s *State) Queue() string {
	q := "default"
	if v := s.field(KeyQueue); !v.IsNull() {
		q = phpjson.ToString(v)
	}
	if q == "" {
		return "default"
	}
	return q
}

// Priority is the workflow's default job priority (_priority; PriorityLow
// when missing or not one of 0..3).
func (s *State) Priority() Priority {
	p := Priority(phpjson.ToInt(s.field(KeyPriority)))
	if !p.Valid() {
		return PriorityLow
	}
	return p
}

// MaxAttempts is the default attempts per step job (_max_attempts; 3 when
// missing or not positive).
func (s *State) MaxAttempts() int64 {
	v := s.field(KeyMaxAttempts)
	if v.IsNull() {
		return 3
	}
	if n := phpjson.ToInt(v); n > 0 {
		return n
	}
	return 3
}

// trimmedString reads an optional string setting: a non-blank string,
// trimmed.
func (s *State) trimmedString(key string) (string, bool) {
	return phpjson.StringValue(s.field(key))
}

// DefinitionHash is the sha256 of the builder's definition (informational;
// absent in run_workflow children).
func (s *State) DefinitionHash() (string, bool) { return s.trimmedString(KeyDefinitionHash) }

// DefinitionVersion is the application's version label (version()).
func (s *State) DefinitionVersion() (string, bool) { return s.trimmedString(KeyDefinitionVersion) }

// IdempotencyKey is the dispatch key the workflow was created under.
func (s *State) IdempotencyKey() (string, bool) { return s.trimmedString(KeyIdempotencyKey) }

// OnCancel is the handler called with the public state after a cancel.
func (s *State) OnCancel() (HandlerRef, bool) { return ParseHandlerRef(s.field(KeyOnCancel)) }

// OnDeadline is the handler called when the deadline passes.
func (s *State) OnDeadline() (HandlerRef, bool) { return ParseHandlerRef(s.field(KeyOnDeadline)) }

// DeadlineSeconds is must_complete_within() as configured. The deadline
// itself is the row's deadline_at, fixed at dispatch.
func (s *State) DeadlineSeconds() (int64, bool) {
	v := s.field(KeyDeadlineSeconds)
	if v.IsNull() {
		return 0, false
	}
	return phpjson.ToInt(v), true
}

// PruneStateAfter returns N of prune_state_after(N) and whether pruning is
// on. The runtime prunes only while _step_outputs is also an array.
func (s *State) PruneStateAfter() (int64, bool) {
	v, ok := s.Get(KeyPruneStateAfter)
	if !ok || v.IsNull() || !phpjson.IsArray(s.field(KeyStepOutputs)) {
		return 0, false
	}
	return phpjson.ToInt(v), true
}

// StepOutputs returns the pruning record: step index to the public keys
// that step wrote. Stored as an int-keyed PHP array, so it is a list or
// an object depending on which steps are recorded; both read the same.
func (s *State) StepOutputs() map[int][]string {
	out := map[int][]string{}
	for k, keys := range phpjson.AsArray(s.field(KeyStepOutputs)).All() {
		var names []string
		for _, key := range phpjson.Values(keys) {
			if str, ok := key.AsString(); ok {
				names = append(names, str)
			}
		}
		out[int(phpjson.StringToInt(k))] = names
	}
	return out
}

// Budget is the workflow's guardrails (_workflow_budget). A zero field is
// no limit.
type Budget struct {
	MaxTransitions      int64
	MaxForEachItems     int64
	MaxStateBytes       int64
	MaxCostUnits        int64
	MaxStartedWorkflows int64
}

// IsZero reports whether no limit is set; the runtime then keeps no
// counters.
func (b Budget) IsZero() bool { return b == Budget{} }

// budgetKeys is the order PHP writes and reads the limits in.
var budgetKeys = [...]string{"max_transitions", "max_for_each_items", "max_state_bytes", "max_cost_units", "max_started_workflows"}

func (b *Budget) fields() [5]*int64 {
	return [5]*int64{&b.MaxTransitions, &b.MaxForEachItems, &b.MaxStateBytes, &b.MaxCostUnits, &b.MaxStartedWorkflows}
}

// Value returns the limits as PHP stores them: only the set ones, in
// order ([] when none).
func (b Budget) Value() phpjson.Value {
	o := phpjson.NewObject()
	for i, f := range b.fields() {
		if *f > 0 {
			o.Set(budgetKeys[i], phpjson.Int(*f))
		}
	}
	return phpjson.ObjectValue(o)
}

// WorkflowBudget returns the configured limits (workflow_budget_limits:
// each read with (int), non-positive ones ignored).
func (s *State) WorkflowBudget() Budget {
	var b Budget
	v := s.field(KeyWorkflowBudget)
	if !phpjson.IsArray(v) {
		return b
	}
	o := phpjson.AsArray(v)
	for i, f := range b.fields() {
		if n := phpjson.ToInt(phpjson.Get(o, budgetKeys[i])); n > 0 {
			*f = n
		}
	}
	return b
}

// Counters is what the budget has used so far (_workflow_counters).
type Counters struct {
	Transitions      int64
	CostUnits        int64
	StartedWorkflows int64
}

// Value returns the counters in PHP's key order.
func (c Counters) Value() phpjson.Value {
	o := phpjson.NewObject()
	o.Set("transitions", phpjson.Int(c.Transitions))
	o.Set("cost_units", phpjson.Int(c.CostUnits))
	o.Set("started_workflows", phpjson.Int(c.StartedWorkflows))
	return phpjson.ObjectValue(o)
}

// WorkflowCounters returns the budget counters (zeros when missing).
func (s *State) WorkflowCounters() Counters {
	o := phpjson.AsArray(s.field(KeyWorkflowCounters))
	return Counters{
		Transitions:      phpjson.ToInt(phpjson.Get(o, "transitions")),
		CostUnits:        phpjson.ToInt(phpjson.Get(o, "cost_units")),
		StartedWorkflows: phpjson.ToInt(phpjson.Get(o, "started_workflows")),
	}
}

// CompensateOnFailure reports compensate_on_failure(): compensations also
// run when the workflow fails, not only on cancel.
func (s *State) CompensateOnFailure() bool { return phpjson.Truthy(s.field(KeyCompensateOnFailure)) }

// StartedBy returns the workflow and step that started this one with
// start_workflows/start_agents (informational; such children are top-level
// rows with no parent columns).
func (s *State) StartedBy() (workflowID, stepIndex int64, ok bool) {
	v, present := s.Get(KeyStartedByWorkflowID)
	if !present || v.IsNull() {
		return 0, 0, false
	}
	return phpjson.ToInt(v), phpjson.ToInt(s.field(KeyStartedByStepIndex)), true
}

// itoa is strconv.Itoa, named for the int-keyed PHP arrays it builds keys for.
func itoa(i int) string { return strconv.Itoa(i) }
