package workflow

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Builder defines a workflow the way Queuety's fluent WorkflowBuilder does
// and produces the exact rows its dispatch() writes.
//
//	d, err := workflow.New("seq").
//		Then("IncStep").
//		Then("IncStep", workflow.Named("second")).
//		WaitForSignal("approval").
//		Build(initialState)
//
// Handlers are PHP class names (or Go handler names): the builder only
// records them. Method names follow Queuety's (then → Then, for_each →
// ForEach, must_complete_within → MustCompleteWithin, ...); PHP's named
// and defaulted parameters become options (see builder_options.go).
//
// Where a PHP method throws, the Go method records a *BuildError with the
// same message, later calls are ignored, and Build returns the error.
type Builder struct {
	name  string
	steps []builderStep

	queue       string
	priority    Priority
	maxAttempts int64

	cancelHandler       *string
	pruneAfter          *int64
	deadlineSeconds     *int64
	deadlineHandler     *string
	version             *string
	idempotencyKey      *string
	maxTransitions      *int64
	maxForEachItems     *int64
	maxStateBytes       *int64
	maxCostUnits        *int64
	maxStartedWorkflows *int64
	compensateOnFailure bool

	meta HandlerMetadataSource
	err  error
}

// New starts a workflow definition (Queuety::workflow($name)) with PHP's
// defaults: queue "default", PriorityLow, 3 attempts per step.
func New(name string) *Builder {
	return &Builder{name: name, queue: "default", priority: PriorityLow, maxAttempts: 3}
}

// Name returns the workflow name.
func (b *Builder) Name() string { return b.name }

// Err returns the first definition error, if any.
func (b *Builder) Err() error { return b.err }

// fail records the first error.
func (b *Builder) fail(method, class, message string) *Builder {
	if b.err == nil {
		b.err = &BuildError{Method: method, Class: class, Message: message}
	}
	return b
}

// failf records a Go-side error (no PHP counterpart: Class is empty).
func (b *Builder) failf(method, format string, args ...any) *Builder {
	return b.fail(method, "", fmt.Sprintf(format, args...))
}

// ok reports whether the builder may still take calls.
func (b *Builder) ok() bool { return b.err == nil }

// OnQueue sets the queue of every step job (on_queue).
func (b *Builder) OnQueue(queue string) *Builder {
	if b.ok() {
		b.queue = queue
	}
	return b
}

// WithPriority sets the priority of every step job (with_priority).
func (b *Builder) WithPriority(p Priority) *Builder {
	if !b.ok() {
		return b
	}
	if !p.Valid() {
		return b.failf("with_priority", "priority %d is not one of Queuety's priorities 0-3", int(p))
	}
	b.priority = p
	return b
}

// MaxAttempts sets the attempts per step job (max_attempts). Like PHP it
// takes any value; the job column stores at least 1.
func (b *Builder) MaxAttempts(n int64) *Builder {
	if b.ok() {
		b.maxAttempts = n
	}
	return b
}

// OnCancel sets the handler called with the public state after a cancel
// (on_cancel).
func (b *Builder) OnCancel(handler string) *Builder {
	if b.ok() {
		b.cancelHandler = &handler
	}
	return b
}

// OnDeadline sets the handler called when the deadline passes (on_deadline).
func (b *Builder) OnDeadline(handler string) *Builder {
	if b.ok() {
		b.deadlineHandler = &handler
	}
	return b
}

// PruneStateAfter removes the public keys a step wrote once n more steps
// have completed (prune_state_after; PHP's default n is 2).
func (b *Builder) PruneStateAfter(n int64) *Builder {
	if b.ok() {
		b.pruneAfter = &n
	}
	return b
}

// MustCompleteWithin sets a deadline for the whole workflow, counted from
// dispatch (must_complete_within). Queuety counts in whole seconds.
func (b *Builder) MustCompleteWithin(d time.Duration) *Builder {
	if !b.ok() {
		return b
	}
	s, ok := wholeSeconds(d)
	if !ok {
		return b.failf("must_complete_within", "deadline %s is not a whole number of seconds", d)
	}
	b.deadlineSeconds = &s
	return b
}

// Version tags the definition with an application version (version).
func (b *Builder) Version(version string) *Builder {
	if !b.ok() {
		return b
	}
	v := phpjson.Trim(version)
	if v == "" {
		return b.fail("version", InvalidArgumentException, "Workflow version cannot be empty.")
	}
	b.version = &v
	return b
}

// IdempotencyKey makes the dispatch idempotent: dispatching again with the
// same key returns the first workflow (idempotency_key).
func (b *Builder) IdempotencyKey(key string) *Builder {
	if !b.ok() {
		return b
	}
	k := phpjson.Trim(key)
	if k == "" {
		return b.fail("idempotency_key", InvalidArgumentException, "Workflow idempotency key cannot be empty.")
	}
	b.idempotencyKey = &k
	return b
}

// budgetLimit records one of the guardrail limits, which must be ≥ 1.
func (b *Builder) budgetLimit(method string, dst **int64, n int64) *Builder {
	if !b.ok() {
		return b
	}
	if n < 1 {
		return b.fail(method, InvalidArgumentException, fmt.Sprintf("Workflow %s must be at least 1.", method))
	}
	*dst = &n
	return b
}

// MaxTransitions fails the workflow after n settled steps (max_transitions).
func (b *Builder) MaxTransitions(n int64) *Builder {
	return b.budgetLimit("max_transitions", &b.maxTransitions, n)
}

// MaxForEachItems caps the items one for_each expansion may plan
// (max_for_each_items).
func (b *Builder) MaxForEachItems(n int64) *Builder {
	return b.budgetLimit("max_for_each_items", &b.maxForEachItems, n)
}

// MaxStateBytes caps the encoded public state (max_state_bytes); Build
// checks the initial state against it.
func (b *Builder) MaxStateBytes(n int64) *Builder {
	return b.budgetLimit("max_state_bytes", &b.maxStateBytes, n)
}

// MaxCostUnits caps the cost units of completed jobs (max_cost_units).
func (b *Builder) MaxCostUnits(n int64) *Builder {
	return b.budgetLimit("max_cost_units", &b.maxCostUnits, n)
}

// MaxStartedWorkflows caps the children start_workflows steps may start
// (max_started_workflows).
func (b *Builder) MaxStartedWorkflows(n int64) *Builder {
	return b.budgetLimit("max_started_workflows", &b.maxStartedWorkflows, n)
}

// CompensateOnFailure also runs compensations when the workflow fails
// (compensate_on_failure); they always run on cancel.
func (b *Builder) CompensateOnFailure() *Builder {
	if b.ok() {
		b.compensateOnFailure = true
	}
	return b
}

// WithHandlerMetadata supplies what Queuety would read from the PHP
// handler classes (attributes, config()) when it enqueues the first step.
// It is not part of the definition. Without it handlers have none.
func (b *Builder) WithHandlerMetadata(src HandlerMetadataSource) *Builder {
	b.meta = src
	return b
}

// Build returns what dispatch($initial) writes: the workflow row with its
// exact state bytes (initial keys first, then _steps, _queue, _priority,
// _max_attempts, _definition_hash and the optional settings in PHP's
// order), the first step's jobs, and the idempotency key. initial may be
// nil (an empty state); it is not modified.
func (b *Builder) Build(initial *phpjson.Object) (*Dispatch, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.steps) == 0 {
		return nil, &BuildError{Method: "dispatch", Class: RuntimeException, Message: "Workflow must have at least one step."}
	}
	if len(b.steps) > maxSteps {
		// workflows.total_steps and jobs.step_index are TINYINT UNSIGNED.
		return nil, &BuildError{Method: "dispatch", Message: fmt.Sprintf("a workflow has at most %d steps, this one has %d", maxSteps, len(b.steps))}
	}
	steps, err := b.buildSteps()
	if err != nil {
		return nil, err
	}
	hash, err := b.definitionHash(steps)
	if err != nil {
		return nil, err
	}
	if initial == nil {
		initial = phpjson.NewObject()
	}

	state := NewState(phpjson.CloneObject(initial))
	state.Set(KeySteps, phpjson.List(steps...))
	state.Set(KeyQueue, phpjson.String(b.queue))
	state.Set(KeyPriority, phpjson.Int(int64(b.priority)))
	state.Set(KeyMaxAttempts, phpjson.Int(b.maxAttempts))
	state.Set(KeyDefinitionHash, phpjson.String(hash))
	if b.cancelHandler != nil {
		state.Set(KeyOnCancel, phpjson.String(*b.cancelHandler))
	}
	if b.pruneAfter != nil {
		state.Set(KeyPruneStateAfter, phpjson.Int(*b.pruneAfter))
		state.Set(KeyStepOutputs, phpjson.List())
	}
	if b.deadlineSeconds != nil {
		state.Set(KeyDeadlineSeconds, phpjson.Int(*b.deadlineSeconds))
	}
	if b.deadlineHandler != nil {
		state.Set(KeyOnDeadline, phpjson.String(*b.deadlineHandler))
	}
	if b.version != nil {
		state.Set(KeyDefinitionVersion, phpjson.String(*b.version))
	}
	if b.idempotencyKey != nil {
		state.Set(KeyIdempotencyKey, phpjson.String(*b.idempotencyKey))
	}
	if budget := b.budget(); !budget.IsZero() {
		state.Set(KeyWorkflowBudget, budget.Value())
		state.Set(KeyWorkflowCounters, Counters{}.Value())
	}
	if b.compensateOnFailure {
		state.Set(KeyCompensateOnFailure, phpjson.Bool(true))
	}
	if b.maxStateBytes != nil {
		if err := checkInitialStateBytes(initial, *b.maxStateBytes); err != nil {
			return nil, err
		}
	}

	row := NewWorkflow{Name: b.name}
	if b.deadlineSeconds != nil {
		row.DeadlineSeconds = sql.NullInt64{Int64: *b.deadlineSeconds, Valid: true}
	}
	// The builder enqueues with its own settings, not the state's
	// normalized reading of them (on_queue('') really queues on '').
	defaults := DispatchDefaults{Queue: b.queue, Priority: b.priority, MaxAttempts: b.maxAttempts}
	return finishDispatch(row, state, defaults, b.queue, b.meta)
}

// maxSteps is the largest step count the TINYINT UNSIGNED columns hold.
const maxSteps = 255

// budget returns the configured limits (workflow_budget_definition).
func (b *Builder) budget() Budget {
	var out Budget
	for i, src := range []*int64{b.maxTransitions, b.maxForEachItems, b.maxStateBytes, b.maxCostUnits, b.maxStartedWorkflows} {
		if src != nil {
			*out.fields()[i] = *src
		}
	}
	return out
}

// wholeSeconds converts d to seconds if it has no fraction.
func wholeSeconds(d time.Duration) (int64, bool) {
	if d%time.Second != 0 {
		return 0, false
	}
	return int64(d / time.Second), true
}
