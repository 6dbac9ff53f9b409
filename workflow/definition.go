package workflow

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// RuntimeDefinition is a workflow definition bundle: what
// WorkflowBuilder::build_runtime_definition() produces, what a
// start_workflows step stores under "workflow_definition", and what
// templates and dispatch_definition() dispatch from:
//
//	{"name":..,"steps":[..],"queue":..,"priority":0,"max_attempts":3,
//	 "cancel_handler":null,"prune_after":null,"deadline_seconds":null,
//	 "deadline_handler":null,"definition_version":null,
//	 "definition_hash":"<sha256>","workflow_budget":[],
//	 "compensate_on_failure":false}
//
// The fields are read the way dispatching the bundle reads them
// (Workflow::materialize_defined_workflow_state); Raw keeps the bundle as
// stored.
type RuntimeDefinition struct {
	Raw *phpjson.Object

	// Name is the trimmed name ("workflow" when blank).
	Name  string
	Steps []Step
	// Queue is the trimmed queue ("default" when blank).
	Queue string
	// Priority is stored as given, even outside 0..3; jobs then use
	// PriorityLow.
	Priority        Priority
	MaxAttempts     int64 // at least 1
	CancelHandler   *HandlerRef
	PruneAfter      int64 // 0 = no pruning
	DeadlineSeconds int64 // 0 = no deadline
	DeadlineHandler *HandlerRef
	// DefinitionVersion and DefinitionHash are trimmed ("" = none). The
	// hash is copied into the child's state, never recomputed.
	DefinitionVersion   string
	DefinitionHash      string
	WorkflowBudget      Budget
	CompensateOnFailure bool
}

// ParseRuntimeDefinition reads a definition bundle. It must be an array
// with a "steps" array, as the runtime requires before dispatching one.
func ParseRuntimeDefinition(v phpjson.Value) (RuntimeDefinition, error) {
	if !phpjson.IsArray(v) || !phpjson.IsArray(phpjson.Get(phpjson.AsArray(v), "steps")) {
		return RuntimeDefinition{}, errors.New("workflow: a definition bundle needs a steps list")
	}
	raw := phpjson.AsArray(v)
	d := RuntimeDefinition{
		Raw:         raw,
		Name:        "workflow",
		Steps:       ParseSteps(phpjson.Get(raw, "steps")),
		Queue:       "default",
		Priority:    Priority(phpjson.ToInt(phpjson.Get(raw, "priority"))),
		MaxAttempts: 3,
	}
	if n, ok := phpjson.StringValue(phpjson.Get(raw, "name")); ok {
		d.Name = n
	}
	if q, ok := phpjson.StringValue(phpjson.Get(raw, "queue")); ok {
		d.Queue = q
	}
	if v := phpjson.Get(raw, "max_attempts"); !v.IsNull() {
		d.MaxAttempts = max(1, phpjson.ToInt(v))
	}
	if ref, ok := ParseHandlerRef(phpjson.Get(raw, "cancel_handler")); ok {
		d.CancelHandler = &ref
	}
	if n, ok := phpjson.PositiveInt(phpjson.Get(raw, "prune_after")); ok {
		d.PruneAfter = n
	}
	if n, ok := phpjson.PositiveInt(phpjson.Get(raw, "deadline_seconds")); ok {
		d.DeadlineSeconds = n
	}
	if ref, ok := ParseHandlerRef(phpjson.Get(raw, "deadline_handler")); ok {
		d.DeadlineHandler = &ref
	}
	d.DefinitionVersion, _ = phpjson.StringValue(phpjson.Get(raw, "definition_version"))
	d.DefinitionHash, _ = phpjson.StringValue(phpjson.Get(raw, "definition_hash"))
	if budget := phpjson.Get(raw, "workflow_budget"); phpjson.IsArray(budget) {
		o := phpjson.AsArray(budget)
		for i, f := range d.WorkflowBudget.fields() {
			if n, ok := phpjson.PositiveInt(phpjson.Get(o, budgetKeys[i])); ok {
				*f = n
			}
		}
	}
	d.CompensateOnFailure = phpjson.Truthy(phpjson.Get(raw, "compensate_on_failure"))
	return d, nil
}

// DefinitionDispatchOptions are what the caller of a bundle dispatch adds.
type DefinitionDispatchOptions struct {
	// ParentWorkflowID and ParentStepIndex link a run_workflow child.
	ParentWorkflowID sql.NullInt64
	ParentStepIndex  sql.NullInt64
	// StartedByWorkflowID and StartedByStepIndex record, in the child's
	// state only, the start_workflows step that started it.
	StartedByWorkflowID sql.NullInt64
	StartedByStepIndex  sql.NullInt64
	// IdempotencyKey is the per-dispatch key option ("" = none; a blank
	// key is an error, as in PHP).
	IdempotencyKey string
	// HandlerMetadata supplies PHP handler-class metadata for the first
	// step's job options (nil = none).
	HandlerMetadata HandlerMetadataSource
}

// Dispatch returns what dispatching the bundle with initial as the public
// state writes (Workflow::dispatch_defined_workflow). Reserved keys are
// appended in the bundle path's order, which differs from the builder's:
// _steps, _queue, _priority, _max_attempts, _on_cancel, _prune_state_after,
// _step_outputs, _deadline_seconds, _on_deadline, _definition_version,
// _definition_hash, _workflow_budget, _workflow_counters,
// _compensate_on_failure, _idempotency_key, _started_by_workflow_id,
// _started_by_step_index. Handler references are stored structured
// ({"class":..,"payload":..}).
//
// Like the runtime it accepts an empty step list (a start_workflows child
// with no steps is inserted running, with no job); PHP's public
// dispatch_definition() refuses one, so check len(d.Steps) first there.
func (d RuntimeDefinition) Dispatch(initial *phpjson.Object, opts DefinitionDispatchOptions) (*Dispatch, error) {
	if initial == nil {
		initial = phpjson.NewObject()
	}
	state := NewState(phpjson.CloneObject(initial))
	steps := phpjson.Get(d.Raw, "steps")
	if !phpjson.IsArray(steps) {
		steps = phpjson.List()
	}
	state.Set(KeySteps, steps)
	state.Set(KeyQueue, phpjson.String(d.Queue))
	state.Set(KeyPriority, phpjson.Int(int64(d.Priority)))
	state.Set(KeyMaxAttempts, phpjson.Int(d.MaxAttempts))
	if d.CancelHandler != nil {
		state.Set(KeyOnCancel, d.CancelHandler.Value())
	}
	if d.PruneAfter > 0 {
		state.Set(KeyPruneStateAfter, phpjson.Int(d.PruneAfter))
		state.Set(KeyStepOutputs, phpjson.List())
	}
	row := NewWorkflow{Name: d.Name, ParentWorkflowID: opts.ParentWorkflowID, ParentStepIndex: opts.ParentStepIndex}
	if d.DeadlineSeconds > 0 {
		state.Set(KeyDeadlineSeconds, phpjson.Int(d.DeadlineSeconds))
		row.DeadlineSeconds = sql.NullInt64{Int64: d.DeadlineSeconds, Valid: true}
	}
	if d.DeadlineHandler != nil {
		state.Set(KeyOnDeadline, d.DeadlineHandler.Value())
	}
	if d.DefinitionVersion != "" {
		state.Set(KeyDefinitionVersion, phpjson.String(d.DefinitionVersion))
	}
	if d.DefinitionHash != "" {
		state.Set(KeyDefinitionHash, phpjson.String(d.DefinitionHash))
	}
	if !d.WorkflowBudget.IsZero() {
		state.Set(KeyWorkflowBudget, d.WorkflowBudget.Value())
		state.Set(KeyWorkflowCounters, Counters{}.Value())
		if err := checkInitialStateBytes(initial, d.WorkflowBudget.MaxStateBytes); err != nil {
			return nil, err
		}
	}
	if d.CompensateOnFailure {
		state.Set(KeyCompensateOnFailure, phpjson.Bool(true))
	}
	if opts.IdempotencyKey != "" {
		key := phpjson.Trim(opts.IdempotencyKey)
		if key == "" {
			return nil, &BuildError{Method: "dispatch_definition", Class: InvalidArgumentException, Message: "Workflow idempotency_key cannot be empty."}
		}
		state.Set(KeyIdempotencyKey, phpjson.String(key))
	}
	if opts.StartedByWorkflowID.Valid {
		state.Set(KeyStartedByWorkflowID, phpjson.Int(opts.StartedByWorkflowID.Int64))
		stepIndex := phpjson.Null()
		if opts.StartedByStepIndex.Valid {
			stepIndex = phpjson.Int(opts.StartedByStepIndex.Int64)
		}
		state.Set(KeyStartedByStepIndex, stepIndex)
	}
	return finishDispatch(row, state, state.DispatchDefaults(), state.Queue(), opts.HandlerMetadata)
}

// finishDispatch encodes the state and lists the first step's jobs, the
// part both dispatch paths share. defaults and queue are what the path
// enqueues and logs with: the builder uses its own settings, the bundle
// path the state's normalized reading of them.
func finishDispatch(row NewWorkflow, state *State, defaults DispatchDefaults, queue string, meta HandlerMetadataSource) (*Dispatch, error) {
	encoded, err := state.Encode()
	if err != nil {
		return nil, fmt.Errorf("workflow: encoding the state of %q: %w", row.Name, err)
	}
	row.State = encoded
	steps := state.Steps()
	if err := validateWorkerSessions(steps); err != nil {
		return nil, err
	}
	if len(steps) > maxSteps {
		return nil, fmt.Errorf("workflow %q: a workflow has at most %d steps (the plugin's schema), this one has %d", row.Name, maxSteps, len(steps))
	}
	row.TotalSteps = len(steps)
	out := &Dispatch{Workflow: row, Queue: queue}
	out.IdempotencyKey, _ = state.IdempotencyKey()
	if len(steps) > 0 {
		out.Jobs, err = StepJobs(steps[0], 0, defaults, meta)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkInitialStateBytes enforces max_state_bytes on the initial state as
// passed (not its public part: a caller's _-keys count too).
func checkInitialStateBytes(initial *phpjson.Object, limit int64) error {
	if limit <= 0 {
		return nil
	}
	b, err := phpjson.Encode(phpjson.ObjectValue(initial))
	if err != nil {
		return fmt.Errorf("workflow: encoding the initial state: %w", err)
	}
	if int64(len(b)) > limit {
		return &BuildError{
			Method:  "dispatch",
			Class:   RuntimeException,
			Message: fmt.Sprintf("Workflow initial state exceeds configured max_state_bytes budget of %d.", limit),
		}
	}
	return nil
}

// ChildDefinition returns the bundle a run_workflow step dispatches its
// child from: only name, steps, queue, priority and max_attempts (the
// sub-builder's version, budgets, deadline, handlers and hash are not
// kept), falling back to the parent's settings where the step has none.
// The child's initial state is the parent's public state.
func (r *RunWorkflowStep) ChildDefinition(parent *State) RuntimeDefinition {
	queue := "default"
	switch {
	case r.HasWorkflowQueue:
		queue = r.WorkflowQueue
	case !parent.field(KeyQueue).IsNull():
		queue = phpjson.ToString(parent.field(KeyQueue))
	}
	if queue == "" {
		queue = "default"
	}
	priority := phpjson.ToInt(parent.field(KeyPriority))
	if r.HasWorkflowPriority {
		priority = int64(r.WorkflowPriority)
	}
	maxAttempts := int64(3)
	switch {
	case r.HasWorkflowMaxAttempts:
		maxAttempts = r.WorkflowMaxAttempts
	case !parent.field(KeyMaxAttempts).IsNull():
		maxAttempts = phpjson.ToInt(parent.field(KeyMaxAttempts))
	}
	if maxAttempts <= 0 {
		maxAttempts = 3
	}
	steps := make([]phpjson.Value, len(r.WorkflowSteps))
	for i, s := range r.WorkflowSteps {
		steps[i] = s.Value()
	}
	raw := phpjson.NewObject().
		Set("name", phpjson.String(r.WorkflowName)).
		Set("steps", phpjson.List(steps...)).
		Set("queue", phpjson.String(queue)).
		Set("priority", phpjson.Int(priority)).
		Set("max_attempts", phpjson.Int(maxAttempts))
	def, _ := ParseRuntimeDefinition(phpjson.ObjectValue(raw)) // has a steps list
	return def
}
