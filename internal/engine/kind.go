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
// (EngineConfig.Kinds) and looks a step's kind up by Step.Type. A kind
// adds the hooks below that its step's life needs, one per part of it;
// for every hook a kind lacks, the engine does what it does for a single
// step (one job of the step's class, finalize_step_completion when it
// completes, chained after the step before it when the worker may run
// it). The model (the builder, Step.Definition, StepJobs) knows the step
// types on its own: it writes _steps and the first step's jobs without an
// engine.
//
// The kinds live in internal/steps; neither workflow nor this package
// imports it.
type Kind interface {
	// Type is the _steps "type" the kind runs.
	Type() workflow.StepType
}

// Placeholder is a kind whose step is driven by one __queuety_*
// placeholder job that the engine runs itself (no PHP class backs it).
type Placeholder interface {
	Kind
	// Placeholder is the jobs.handler of that job.
	Placeholder() string
	// Admit is asked about a claimed placeholder job whose state could be
	// read, before anything is written for it.
	Admit(ctx context.Context, p *AdmitParams) Admission
	// RunPlaceholder runs the claimed placeholder job and settles the step,
	// usually through Run.Advance. An error fails the attempt.
	RunPlaceholder(ctx context.Context, r *Run) error
}

// AdmitParams is a claimed placeholder job Placeholder.Admit is asked
// about.
type AdmitParams struct {
	Engine *Engine
	Job    *store.JobRow
	// State is the workflow state the job starts from; Step is its step
	// (HasStep false when the state lacks it).
	State   *workflow.State
	Step    workflow.Step
	HasStep bool
}

// Admission is Placeholder.Admit's answer; the zero value runs the job.
type Admission struct {
	// Refuse is returned to the worker as is, nothing written for the job
	// (no `started` log, no event): a step left to PHP workers.
	Refuse error
	// Fail fails the attempt at once, the placeholder not run, unless the
	// job already fails for another reason (its classes' settings could
	// not be read); its events carry no state snapshot, the state being
	// what is too big (a for_each over more items than
	// EngineConfig.MaxForEachItems). A ConstraintViolation fails the
	// step for good.
	Fail error
}

// Branch is a kind whose step runs as several jobs (branches) that
// complete one by one.
type Branch interface {
	Kind
	// CompleteBranch settles one branch job with its output, inside the
	// step transaction after its guards, in place of
	// finalize_step_completion.
	CompleteBranch(ctx context.Context, a *Advance, step workflow.Step, out *phpjson.Object) error
	// Item reads the item a job's payload carries (for_each's __for_each
	// entry), which the class's item handler runs (ForEachHandler::
	// handle_item) when it has one; ok is false for a job that carries
	// none.
	Item(payload string) (item BranchItem, ok bool)
	// FailBranch records a branch job (its Item indexed) that failed for
	// good: the engine buried it, and calls FailBranch under the
	// workflow's lock when the step is current and the workflow live.
	// failed says whether the workflow failed with it; such a job never
	// fails the workflow the way a single step's does.
	FailBranch(ctx context.Context, a *Advance, step workflow.Step, message string) (failed bool, err error)
	// Retry resets the kind's runtime when a failed workflow is retried at
	// its step (Engine.Retry), before the step is enqueued again.
	Retry(ctx context.Context, a *Advance, step workflow.Step) error
	// CheckEnqueue is the kind's budget check before its step is enqueued
	// as the next one.
	CheckEnqueue(state *workflow.State, step workflow.Step) error
}

// BranchItem is the item a branch job carries.
type BranchItem struct {
	Item  phpjson.Value
	Index int64
	// Indexed: the payload names the item's index, so the job is a real
	// branch (a for_each placeholder carries none).
	Indexed bool
}

// OwnJobs is a kind that enqueues its step's job itself and runs it when
// claimed, recording its own attempts and outcomes outside the engine's
// step path (local activities).
type OwnJobs interface {
	Kind
	// Enqueue enqueues step index; handled=false falls back to StepJobs'
	// rows.
	Enqueue(ctx context.Context, a *Advance, step workflow.Step, index int) (handled bool, err error)
	// RunClaimed runs a claimed job of the step.
	RunClaimed(ctx context.Context, e *Engine, job *store.JobRow) error
}

// Wait is a kind whose step parks its workflow with a _wait context until
// something outside the step settles it.
type Wait interface {
	Kind
	// WaitType is the _wait "type" the step parks with.
	WaitType() string
	// WaitDetails is the status API's wait details of a workflow whose
	// _wait has the kind's type.
	WaitDetails(ctx context.Context, p *WaitDetailsParams) (*phpjson.Object, error)
	// Wake re-evaluates the wait of the locked workflow parked at w.Step
	// when w.Cause may have settled it; handled is false when the kind
	// does not wait on that cause.
	Wake(ctx context.Context, a *Advance, w *Wake) (handled bool, err error)
}

// WaitDetailsParams is the workflow Wait.WaitDetails describes.
type WaitDetailsParams struct {
	Engine     *Engine
	WorkflowID int64
	// Step is the workflow's current step (an object), State its state.
	Step  workflow.Step
	State *workflow.State
}

// WakeCause is what may have settled a wait.
type WakeCause int

const (
	// WakeSignal: a signal was stored (Engine.Signal, ResumeSignalWait)
	// for a workflow waiting_for_signal.
	WakeSignal WakeCause = iota + 1
	// WakeDependency: a workflow another one waits on ended, or the
	// sweeper re-evaluates a workflow waiting_for_workflows.
	WakeDependency
)

// Wake is one re-evaluation of a parked step.
type Wake struct {
	Cause WakeCause
	// Index and Step are the step the workflow is parked at.
	Index int
	Step  workflow.Step
	// Signal is the stored signal's name ("" = re-evaluate for any).
	Signal string
}

// Parent is a kind whose step parks its workflow on one nested child
// workflow (the child's parent_workflow_id and parent_step_index). The
// engine calls it, under the parent's lock, when the child ends and the
// parent is live and still at the step.
type Parent interface {
	Kind
	// ChildCompleted resumes the parent with the completed child's state.
	ChildCompleted(ctx context.Context, a *Advance, c *ChildCompleted) error
	// ChildFailed handles a failed or cancelled child; a.Workflow() is the
	// parent, its state loaded.
	ChildFailed(ctx context.Context, a *Advance, child *store.WorkflowRow) error
}

// ChildCompleted is a child's completion Parent.ChildCompleted resumes
// its parent with.
type ChildCompleted struct {
	// Parent is the locked parent row, State its state, at Step (index
	// Index).
	Parent *store.WorkflowRow
	State  *workflow.State
	Step   workflow.Step
	Index  int
	// Child is the completed child's state.
	Child *workflow.State
}

// chains reports whether a step of kind k runs as one job of its own
// class that a worker may run right after the commit that enqueued it,
// without a claim (chain.go): a kind with none of the hooks of a
// placeholder, branches or jobs of its own (single).
func chains(k Kind) bool {
	if k == nil {
		return false
	}
	_, placeholder := k.(Placeholder)
	_, branch := k.(Branch)
	_, own := k.(OwnJobs)
	return !placeholder && !branch && !own
}

// kindSet is an engine's kinds, by step type, by placeholder handler and
// by wait type.
type kindSet struct {
	byType        map[workflow.StepType]Kind
	byPlaceholder map[string]Placeholder
	byWaitType    map[string]Wait
	// branches are the Branch kinds, in the order given.
	branches []Branch
}

func newKindSet(kinds []Kind) kindSet {
	ks := kindSet{byType: map[workflow.StepType]Kind{}, byPlaceholder: map[string]Placeholder{}, byWaitType: map[string]Wait{}}
	for _, k := range kinds {
		if _, dup := ks.byType[k.Type()]; dup {
			panic(fmt.Sprintf("workflow: two kinds for step type %q", k.Type()))
		}
		ks.byType[k.Type()] = k
		if p, ok := k.(Placeholder); ok {
			ks.byPlaceholder[p.Placeholder()] = p
		}
		if w, ok := k.(Wait); ok {
			ks.byWaitType[w.WaitType()] = w
		}
		if b, ok := k.(Branch); ok {
			ks.branches = append(ks.branches, b)
		}
	}
	return ks
}

// branchItem is the item job's payload carries for any branch kind,
// whatever its step: the trace of a job and the recovery of a stale one
// read it before, or without, the step.
func (ks kindSet) branchItem(payload string) (BranchItem, bool) {
	for _, b := range ks.branches {
		if item, ok := b.Item(payload); ok {
			return item, true
		}
	}
	return BranchItem{}, false
}

// stepItem is the item job's payload carries for step's kind, when that
// kind has branches that carry items.
func (e *Engine) stepItem(step workflow.Step, payload string) (BranchItem, bool) {
	if b, ok := e.Kind(step.Type()).(Branch); ok {
		return b.Item(payload)
	}
	return BranchItem{}, false
}

// Placeholders lists the __queuety_* placeholder handlers of kinds, the
// jobs an engine given them runs itself.
func Placeholders(kinds []Kind) []string {
	var out []string
	for _, k := range kinds {
		if p, ok := k.(Placeholder); ok {
			out = append(out, p.Placeholder())
		}
	}
	return out
}

// Kind returns the engine's kind for step type t (nil: none, the step runs
// as a single step).
func (e *Engine) Kind(t workflow.StepType) Kind { return e.kinds.byType[t] }

// Run is one claimed placeholder job being run (Placeholder).
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
