package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Kind is the runtime of one step type. The engine is given its kinds
// (NewEngine) and looks a step's kind up by Step.Type; for every hook below
// that a kind does not implement, the engine does what it does for a single
// step. The model (the builder, Step.Definition, StepJobs) knows the step
// types on its own: it writes _steps and the first step's jobs without an
// engine.
//
// The kinds live in package steps; workflow never imports it.
type Kind interface {
	// Type is the _steps "type" the kind runs.
	Type() workflow.StepType
}

// PlaceholderKind is a kind whose step is driven by one __queuety_*
// placeholder job that the engine runs itself (no PHP class backs it).
type PlaceholderKind interface {
	Kind
	// Placeholder is the jobs.handler of that job.
	Placeholder() string
	// RunPlaceholder runs the claimed placeholder job and settles the step,
	// usually through Run.Advance. An error fails the attempt.
	RunPlaceholder(ctx context.Context, r *Run) error
}

// ClaimKind is a kind whose claimed jobs run outside the engine's step
// path, recording their own attempts and outcomes (local activities).
type ClaimKind interface {
	Kind
	RunClaimed(ctx context.Context, e *Engine, job *store.JobRow) error
}

// PreflightKind is a placeholder kind that may refuse a claimed job before
// anything is written for it (no `started` log, no event): a non-nil error
// is returned to the worker as is.
type PreflightKind interface {
	PlaceholderKind
	Preflight(ctx context.Context, e *Engine, job *store.JobRow, state *workflow.State) error
}

// LimitKind is a placeholder kind whose step may be too big for this
// worker (a for_each over more items than EngineConfig.MaxForEachItems):
// OverLimit returns the ConstraintViolation that fails it at once, before
// anything else runs or is written for it.
type LimitKind interface {
	PlaceholderKind
	OverLimit(e *Engine, state *workflow.State, step workflow.Step) error
}

// BranchKind is a kind whose step runs as several jobs (branches) that
// complete one by one: CompleteBranch replaces finalize_step_completion for
// each of them, inside the step transaction, after its guards.
type BranchKind interface {
	Kind
	CompleteBranch(ctx context.Context, a *Advance, step workflow.Step, out *phpjson.Object) error
}

// EnqueueKind is a kind that enqueues its step itself rather than
// inserting StepJobs' rows. handled=false falls back to StepJobs.
type EnqueueKind interface {
	Kind
	Enqueue(ctx context.Context, a *Advance, step workflow.Step, index int) (handled bool, err error)
}

// ParentKind is a kind whose step parks its workflow on one nested child
// workflow (the child's parent_workflow_id and parent_step_index). The
// engine calls it, under the parent's lock, when the child ends and the
// parent is live and still at the step.
type ParentKind interface {
	Kind
	// ChildCompleted resumes parent (its state pstate, at step s, index)
	// with the completed child's state.
	ChildCompleted(ctx context.Context, a *Advance, parent *store.WorkflowRow, pstate *workflow.State, s workflow.Step, index int, child *workflow.State) error
	// ChildFailed handles a failed or cancelled child; a.Workflow() is the
	// parent, its state loaded.
	ChildFailed(ctx context.Context, a *Advance, child *store.WorkflowRow) error
}

// WaitKind is a kind whose step parks its workflow with a _wait context
// until something outside the step settles it.
type WaitKind interface {
	Kind
	// WaitType is the _wait "type" the step parks with.
	WaitType() string
	// WaitDetails is the status API's wait details of a workflow whose
	// _wait has the kind's type; step is its current step (an object).
	WaitDetails(ctx context.Context, e *Engine, workflowID int64, step workflow.Step, state *workflow.State) (*phpjson.Object, error)
}

// SignalKind is a wait kind a stored signal may settle: Engine.Signal and
// ResumeSignalWait call it on a locked workflow waiting_for_signal at the
// step, with the signal's name ("" = re-evaluate for any).
type SignalKind interface {
	WaitKind
	Signalled(ctx context.Context, a *Advance, step workflow.Step, name string) error
}

// DependencyKind is a wait kind the end of another workflow may settle:
// the post-commit wake-up and the sweeper call it on a locked workflow
// waiting_for_workflows at step index.
type DependencyKind interface {
	WaitKind
	DependencyEnded(ctx context.Context, a *Advance, index int, step workflow.Step) error
}

// ChainKind is a kind whose one handler job a worker may run right after
// the commit that enqueued it, without a claim (chain.go).
type ChainKind interface {
	Kind
	Chains() bool
}

// ItemKind is a kind whose branch jobs each carry one item (the payload's
// __for_each entry) that the class's item handler runs
// (ForEachHandler::handle_item), when it has one.
type ItemKind interface {
	Kind
	RunsItems() bool
}

// BranchFailureKind is a kind whose branch jobs (a __for_each payload with
// an item_index) do not fail the workflow by failing for good: the engine
// buries the job, and BranchFailed records it under the workflow's lock
// (the step is current and the workflow live) and says whether the
// workflow failed.
type BranchFailureKind interface {
	Kind
	BranchFailed(ctx context.Context, a *Advance, step workflow.Step, message string) (failed bool, err error)
}

// RetryKind is a kind that resets its runtime when a failed workflow is
// retried at its step (Engine.Retry), before the step is enqueued again.
type RetryKind interface {
	Kind
	Retry(ctx context.Context, a *Advance, step workflow.Step) error
}

// BudgetKind is a kind with a budget check of its own before its step is
// enqueued as the next one.
type BudgetKind interface {
	Kind
	CheckEnqueue(state *workflow.State, step workflow.Step) error
}

// kindSet is an engine's kinds, by step type, by placeholder handler and
// by wait type.
type kindSet struct {
	byType        map[workflow.StepType]Kind
	byPlaceholder map[string]PlaceholderKind
	byWaitType    map[string]WaitKind
}

func newKindSet(kinds []Kind) kindSet {
	ks := kindSet{byType: map[workflow.StepType]Kind{}, byPlaceholder: map[string]PlaceholderKind{}, byWaitType: map[string]WaitKind{}}
	for _, k := range kinds {
		if _, dup := ks.byType[k.Type()]; dup {
			panic(fmt.Sprintf("workflow: two kinds for step type %q", k.Type()))
		}
		ks.byType[k.Type()] = k
		if p, ok := k.(PlaceholderKind); ok {
			ks.byPlaceholder[p.Placeholder()] = p
		}
		if w, ok := k.(WaitKind); ok {
			ks.byWaitType[w.WaitType()] = w
		}
	}
	return ks
}

// Kind returns the engine's kind for step type t (nil: none, the step runs
// as a single step).
func (e *Engine) Kind(t workflow.StepType) Kind { return e.kinds.byType[t] }

// Run is one claimed placeholder job being run (PlaceholderKind).
type Run struct {
	e     *Engine
	job   *store.JobRow
	state *workflow.State
	trace *jobTrace
	start time.Time
}

// Engine returns the engine running the job.
func (r *Run) Engine() *Engine { return r.e }

// Job returns the claimed job.
func (r *Run) Job() *store.JobRow { return r.job }

// State returns the workflow state the job started from.
func (r *Run) State() *workflow.State { return r.state }

// Index is the job's step index.
func (r *Run) Index() int { return int(r.job.StepIndex.Int64) }

// WorkflowID is the job's workflow.
func (r *Run) WorkflowID() int64 { return r.job.WorkflowID.Int64 }

// Elapsed is the time since the job started running.
func (r *Run) Elapsed() time.Duration { return time.Since(r.start) }

// Advance settles the step with out in its step transaction (Queuety's
// advance_step); dur is the job's duration and extra are log rows written
// after the engine's own.
func (r *Run) Advance(ctx context.Context, out *phpjson.Object, dur time.Duration, extra ...store.LogRow) error {
	return r.e.advance(ctx, r.job, out, r.trace, dur, extra...)
}

// Transact runs body in the job's step transaction, with the job's
// `started` log and step_started event written first, then the engine's
// post-commit work (compensations, wake-ups). The Advance is returned for
// a kind's own post-commit work.
func (r *Run) Transact(ctx context.Context, body func(a *Advance) error) (*Advance, error) {
	a, err := r.e.stepTx(ctx, r.trace, 0, func(a *Advance) error {
		a.claimed = r.state
		return body(a)
	})
	if err != nil {
		return a, err
	}
	r.trace.startWritten()
	return a, r.e.afterCommit(ctx, a)
}

// CompletedLog is the `completed` log row of the job after dur.
func (r *Run) CompletedLog(dur time.Duration) store.LogRow {
	return r.e.completedLog(r.job, r.WorkflowID(), r.Index(), dur)
}

// LookupCondition returns the condition handler of class: a Go one, else
// one the CallableRunner runs in PHP, if the engine has one.
func (e *Engine) LookupCondition(class string) (workflow.ConditionFunc, bool) {
	return e.lookupCondition(class)
}

// RunsPHPCallables reports whether the engine has a CallableRunner (PHP
// conditions, compensations and hooks run in the pool).
func (e *Engine) RunsPHPCallables() bool { return e.callables() != nil }

// LeaveToPHP records, once per process and workflow, that a workflow's
// step or terminal handling for reason was left to PHP workers, and
// returns the NeedsPHPError a kind refuses the job with.
func (e *Engine) LeaveToPHP(ctx context.Context, workflowID int64, reason string, classes []string) error {
	_ = e.noteLeftToPHP(ctx, workflowID, reason, classes)
	return &workflow.NeedsPHPError{WorkflowID: workflowID, Action: reason, Classes: classes}
}

// Metadata is the engine's handler metadata source (a Go handler's
// registration, else the injected class source's).
func (e *Engine) Metadata() workflow.HandlerMetadataSource { return e.metadata() }

// Store returns the engine's store (reads outside a step transaction).
func (e *Engine) Store() *store.Store { return e.store }

// ReevaluateWait re-evaluates, in its own transaction, a workflow parked
// waiting_for_workflows at step, then wakes what waited on the workflows
// that made terminal.
func (e *Engine) ReevaluateWait(ctx context.Context, workflowID int64, step int) error {
	t, err := e.reconcileWaiter(ctx, workflowID, step, 0, "")
	if err != nil {
		return err
	}
	e.afterTerminal(ctx, t...)
	return nil
}

// RunLocalClaimed runs a claimed local activity job: its attempt, outcome
// and the step's settlement (local_activity.go).
func (e *Engine) RunLocalClaimed(ctx context.Context, job *store.JobRow) error {
	return e.runLocalClaimed(ctx, job)
}

// runsItems reports whether step's kind runs its branches with item
// handlers.
func (e *Engine) runsItems(step workflow.Step) bool {
	k, ok := e.Kind(step.Type()).(ItemKind)
	return ok && k.RunsItems()
}

// LookupReducer returns the reducer handler of class: a Go one, else one
// the CallableRunner runs in PHP, if the engine has one.
func (e *Engine) LookupReducer(class string) (workflow.ReducerFunc, bool) {
	return e.lookupReducer(class)
}
