package workflow

import (
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StepDefinition is the typed reading of a Step: one of *SingleStep,
// *ParallelStep, *ForEachStep, *RepeatStep, *RunWorkflowStep, *DelayStep,
// *WaitForSignalStep, *WaitForWorkflowsStep or *StartWorkflowsStep.
//
// Fields hold what the PHP runtime acts on, read with its defaults and
// loose conversions (a blank result_key is no result key, a wait_mode it
// does not know means "all", ...). The stored bytes stay in the Step.
type StepDefinition interface {
	// Type is the step type this definition runs as.
	Type() StepType
	// Common returns the fields every step shares.
	Common() StepCommon
}

// StepCommon holds what every step definition may carry.
type StepCommon struct {
	// Name is the stored "name" ("" when missing or not a string; use
	// Step.Name for the name the runtime resolves).
	Name string
	// Compensation is the handler run on cancel (or on failure with
	// compensate_on_failure) after this step settled; nil when none.
	Compensation *HandlerRef
}

// Common returns c; it lets every definition satisfy StepDefinition.
func (c StepCommon) Common() StepCommon { return c }

// Definition decodes the step into its typed view. It fails only where the
// PHP runtime would throw on the same definition: an unknown for_each mode,
// an unknown repeat mode, a start_workflows step without a steps list.
func (s Step) Definition() (StepDefinition, error) {
	name, _ := s.StoredName()
	c := StepCommon{Name: name}
	if ref, ok := s.Compensation(); ok {
		c.Compensation = &ref
	}
	switch s.Type() {
	case StepParallel:
		return s.parallelDef(c), nil
	case StepForEach:
		return s.forEachDef(c)
	case StepRepeat:
		return s.repeatDef(c)
	case StepRunWorkflow:
		return s.runWorkflowDef(c), nil
	case StepDelay:
		return &DelayStep{StepCommon: c, Seconds: phpjson.ToInt(s.field("delay_seconds"))}, nil
	case StepWaitForSignal:
		return s.waitForSignalDef(c), nil
	case StepWaitForWorkflows:
		return s.waitForWorkflowsDef(c), nil
	case StepStartWorkflows:
		return s.startWorkflowsDef(c)
	case StepLocalActivity:
		return s.localActivityDef(c)
	}
	// "single", a legacy string, and any type the runtime does not know:
	// all are enqueued as one job for the step's class.
	return &SingleStep{StepCommon: c, Class: s.Class(), Legacy: s.IsLegacy(), Payload: stepPayload(s.Object())}, nil
}

// SingleStep runs one handler job (builder: then()).
type SingleStep struct {
	StepCommon
	Class string
	// Legacy is set for a plain class-string entry.
	Legacy bool
	// Payload is the job payload a serialized definition may give the step
	// (empty for builder steps); __queuety_runtime is added on dispatch.
	Payload *phpjson.Object
}

// Type implements StepDefinition.
func (*SingleStep) Type() StepType { return StepSingle }

// ParallelStep runs one job per branch and settles when all completed
// (builder: parallel()).
type ParallelStep struct {
	StepCommon
	// Handlers is the builder's "handlers" list as stored (strings only).
	Handlers []string
	// Branches are the branches the runtime dispatches: the serialized
	// "branches" when present, else one per non-blank handler.
	Branches []ParallelBranch
}

// Type implements StepDefinition.
func (*ParallelStep) Type() StepType { return StepParallel }

// ParallelBranch is one branch of a parallel step.
type ParallelBranch struct {
	Class string
	// Name is the branch's own "name", if a serialized definition gave one.
	Name string
	// Definition is the normalized branch object: its string keys, with
	// "class" set to Class. Its options override the step's on dispatch.
	Definition *phpjson.Object
}

func (s Step) parallelDef(c StepCommon) *ParallelStep {
	p := &ParallelStep{StepCommon: c}
	for _, h := range phpjson.Values(s.field("handlers")) {
		if str, ok := h.AsString(); ok {
			p.Handlers = append(p.Handlers, str)
		}
	}
	for _, b := range ParallelBranches(s.Object()) {
		name, _ := phpjson.Get(b, "name").AsString()
		p.Branches = append(p.Branches, ParallelBranch{Class: branchHandler(b), Name: name, Definition: b})
	}
	return p
}

// ForEachStep fans out one job per item of a state list (builder:
// for_each()).
type ForEachStep struct {
	StepCommon
	ItemsKey string
	Class    string
	// ResultKey is the configured key for the aggregate ("" = the default,
	// see AggregateKey).
	ResultKey string
	Mode      ForEachMode
	// Quorum is the stored quorum, 0 when null; ForEachQuorum needs
	// max(1, Quorum) successes.
	Quorum int64
	// Reducer folds the aggregate into extra output; nil when none.
	Reducer *HandlerRef

	storedName phpjson.Value
}

// Type implements StepDefinition.
func (*ForEachStep) Type() StepType { return StepForEach }

// AggregateKey is the state key the settled aggregate is stored under: the
// result key, or "<step name>_results".
func (f *ForEachStep) AggregateKey(index int) string {
	if f.ResultKey != "" {
		return f.ResultKey
	}
	// Unlike Step.Name, an empty or non-string stored name is used as is.
	if f.storedName.IsNull() {
		return strconv.Itoa(index) + "_results"
	}
	return phpjson.ToString(f.storedName) + "_results"
}

func (s Step) forEachDef(c StepCommon) (*ForEachStep, error) {
	mode := ForEachAll
	if v := s.field("mode"); !v.IsNull() {
		mode = ForEachMode(phpjson.ToString(v))
	}
	switch mode {
	case ForEachAll, ForEachFirstSuccess, ForEachQuorum:
	default:
		// ForEachMode::from() throws a ValueError for it.
		return nil, fmt.Errorf("workflow: for_each step %q: %q is not a valid for-each mode", c.Name, mode)
	}
	f := &ForEachStep{
		StepCommon: c,
		ItemsKey:   phpjson.ToString(s.field("items_key")),
		Class:      s.Class(),
		ResultKey:  phpjson.OptionalString(s.field("result_key")),
		Mode:       mode,
		Quorum:     phpjson.ToInt(s.field("quorum")),
		storedName: s.field("name"),
	}
	// A structured "reducer" wins over the builder's "reducer_class".
	if ref, ok := ParseHandlerRef(s.field("reducer")); ok {
		f.Reducer = &ref
	} else if ref, ok := ParseHandlerRef(s.field("reducer_class")); ok {
		f.Reducer = &ref
	}
	return f, nil
}

// RepeatStep jumps back to an earlier step while (or until) a condition
// matches (builder: repeat_while(), repeat_until()).
type RepeatStep struct {
	StepCommon
	Mode       RepeatMode
	TargetStep string
	// StateKey and Expected: the step compares state[StateKey] with
	// Expected (canonical JSON equality) unless a Condition is set.
	StateKey string
	Expected phpjson.Value
	// Condition is a RepeatCondition handler; it wins over StateKey.
	Condition *HandlerRef
	// MaxIterations caps the jumps back; 0 = no cap.
	MaxIterations int64
}

// Type implements StepDefinition.
func (*RepeatStep) Type() StepType { return StepRepeat }

func (s Step) repeatDef(c StepCommon) (*RepeatStep, error) {
	mode := RepeatWhile
	if v := s.field("repeat_mode"); !v.IsNull() {
		mode = RepeatMode(phpjson.ToString(v))
	}
	if mode != RepeatWhile && mode != RepeatUntil {
		return nil, fmt.Errorf("workflow: repeat step %q: Unsupported repeat mode '%s'.", c.Name, mode)
	}
	r := &RepeatStep{
		StepCommon: c,
		Mode:       mode,
		TargetStep: phpjson.Trim(phpjson.ToString(s.field("target_step"))),
		StateKey:   phpjson.Trim(phpjson.ToString(s.field("state_key"))),
		Expected:   phpjson.Bool(true),
	}
	if v := s.field("expected"); !v.IsNull() {
		r.Expected = v
	}
	if ref, ok := ParseHandlerRef(s.field("condition")); ok {
		r.Condition = &ref
	} else if ref, ok := ParseHandlerRef(s.field("condition_class")); ok {
		r.Condition = &ref
	}
	if v := s.field("max_iterations"); !v.IsNull() {
		r.MaxIterations = phpjson.ToInt(v)
	}
	return r, nil
}

// RunWorkflowStep starts a nested child workflow and parks the parent
// until the child completes (builder: run_workflow()).
type RunWorkflowStep struct {
	StepCommon
	WorkflowName  string
	WorkflowSteps []Step
	// WorkflowQueue, WorkflowPriority and WorkflowMaxAttempts are the
	// child's settings; the Has* flags say whether the step stores them
	// (when it does not, the parent's _queue/_priority/_max_attempts apply).
	WorkflowQueue          string
	HasWorkflowQueue       bool
	WorkflowPriority       Priority
	HasWorkflowPriority    bool
	WorkflowMaxAttempts    int64
	HasWorkflowMaxAttempts bool
}

// Type implements StepDefinition.
func (*RunWorkflowStep) Type() StepType { return StepRunWorkflow }

func (s Step) runWorkflowDef(c StepCommon) *RunWorkflowStep {
	r := &RunWorkflowStep{
		StepCommon:    c,
		WorkflowName:  "run_workflow",
		WorkflowSteps: ParseSteps(s.field("workflow_steps")),
	}
	if v := s.field("workflow_name"); !v.IsNull() {
		r.WorkflowName = phpjson.ToString(v)
	}
	if v := s.field("workflow_queue"); !v.IsNull() {
		r.WorkflowQueue, r.HasWorkflowQueue = phpjson.ToString(v), true
	}
	if v := s.field("workflow_priority"); !v.IsNull() {
		r.WorkflowPriority, r.HasWorkflowPriority = Priority(phpjson.ToInt(v)), true
	}
	if v := s.field("workflow_max_attempts"); !v.IsNull() {
		r.WorkflowMaxAttempts, r.HasWorkflowMaxAttempts = phpjson.ToInt(v), true
	}
	return r
}

// DelayStep parks the workflow for a duration on a delayed placeholder job
// (builder: delay()).
type DelayStep struct {
	StepCommon
	Seconds int64
}

// Type implements StepDefinition.
func (*DelayStep) Type() StepType { return StepDelay }

// StartWorkflowsStep starts one independent top-level workflow per item of
// a state list and stores their ids (builder: start_workflows(),
// start_agents()).
type StartWorkflowsStep struct {
	StepCommon
	ItemsKey string
	// ResultKey receives the list of started ids (default
	// "started_workflow_ids").
	ResultKey string
	// PayloadKey holds a scalar item in the child's state (default "item").
	PayloadKey string
	// InheritState copies the parent's public state into each child.
	InheritState bool
	// GroupKey names the group in _workflow_groups ("" = none).
	GroupKey string
	// WorkflowDefinition is the bundle each child is dispatched from.
	WorkflowDefinition RuntimeDefinition
}

// Type implements StepDefinition.
func (*StartWorkflowsStep) Type() StepType { return StepStartWorkflows }

func (s Step) startWorkflowsDef(c StepCommon) (*StartWorkflowsStep, error) {
	def, err := ParseRuntimeDefinition(s.field("workflow_definition"))
	if err != nil {
		return nil, fmt.Errorf("workflow: Start step '%s' is missing a valid workflow definition.", c.Name)
	}
	st := &StartWorkflowsStep{
		StepCommon:         c,
		ItemsKey:           phpjson.Trim(phpjson.ToString(s.field("items_key"))),
		ResultKey:          "started_workflow_ids",
		PayloadKey:         "item",
		InheritState:       phpjson.Truthy(s.field("inherit_state")),
		GroupKey:           phpjson.Trim(phpjson.ToString(s.field("group_key"))),
		WorkflowDefinition: def,
	}
	if v := s.field("result_key"); !v.IsNull() {
		st.ResultKey = phpjson.Trim(phpjson.ToString(v))
	}
	if v := s.field("payload_key"); !v.IsNull() {
		st.PayloadKey = phpjson.Trim(phpjson.ToString(v))
	}
	return st, nil
}
