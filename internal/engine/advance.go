package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Messages Queuety writes to jobs.error_message.
const (
	msgAdvancedBefore = "Workflow advanced before job completion."
)

// Advance is one step transaction (Queuety's advance_step and the other
// transactions that settle or move a step): the locked workflow and job
// rows and the state being written. Kinds act on a step only through it,
// inside the transaction; ctx is given per call.
type Advance struct {
	e     *Engine
	tx    *store.WorkflowTx
	trace *jobTrace
	dur   time.Duration
	// php is what the transaction notes of PHP it found not ready
	// (engine_locked.go); nil: it waits for PHP, rows locked.
	php *phpInTx

	wf      *store.WorkflowRow
	job     *store.JobRow
	state   *workflow.State
	claimed *workflow.State // the state the claimed job started from, when LockStep may reuse it
	steps   []workflow.Step
	current int
	// compensate: the transaction failed a workflow that opted in to
	// compensation on failure; they run after the commit.
	compensate bool
	// terminal lists the workflows the transaction made terminal; their
	// waiters are woken after the commit (afterTerminal).
	terminal []int64
	// parked, settled: the transaction parked the workflow on a wait, or
	// settled one.
	parked, settled bool
	// runLocal: the caller runs, right after the commit, a local activity
	// this transaction enqueues (claimed for it, attempt started), which
	// is then localNext (local_activity.go).
	runLocal  bool
	localNext *localAttempt
	// chained: the next step's job, enqueued claimed for the worker
	// (chain.go); written: the state bytes writeStep stored.
	chained *Chained
	written []byte
}

// stepTx runs body in one step transaction: a fresh Advance over a copy
// of the job's trace (a retried transaction starts from the same trace),
// with the job's `started` log and step_started event written first. The
// Advance is returned for the post-commit work (afterCommit).
func (e *Engine) stepTx(ctx context.Context, tr *jobTrace, dur time.Duration, body func(a *Advance) error) (*Advance, error) {
	return e.stepTxIn(ctx, 0, 0, tr, dur, body)
}

// stepTxIn is stepTx that may share its transaction with the step
// transactions of other goroutines (group commit, step_batch.go) when
// batchKey, the workflow the body locks first, is not 0; batchJob is the
// job it locks next (0: none).
func (e *Engine) stepTxIn(ctx context.Context, batchKey, batchJob int64, tr *jobTrace, dur time.Duration, body func(a *Advance) error) (*Advance, error) {
	return e.stepTxOn(ctx, tr, dur, body, func(fn func(*store.WorkflowTx) error) error {
		if batchKey != 0 && e.stepBatch > 1 {
			return e.batch.run(ctx, e, batchKey, batchJob, fn)
		}
		return e.store.WorkflowTx(ctx, fn)
	})
}

// pipelinedStepTx is stepTx on a pipelined transaction
// (store.PipelinedWorkflowTx): never batched, its statements sent in as
// few packets as their results allow.
func (e *Engine) pipelinedStepTx(ctx context.Context, tr *jobTrace, dur time.Duration, body func(a *Advance) error) (*Advance, error) {
	return e.stepTxOn(ctx, tr, dur, body, func(fn func(*store.WorkflowTx) error) error {
		return e.store.PipelinedWorkflowTx(ctx, fn)
	})
}

// stepTxOn runs body as a step transaction through run, which runs the
// transaction's function (once, or again on a retry).
// A transaction that found PHP not ready for it (a class's settings not
// read, a reducer's pool not running) is rolled back, PHP is waited for
// with no row locked, and it runs again: at most maxPHPWaits times.
func (e *Engine) stepTxOn(ctx context.Context, tr *jobTrace, dur time.Duration, body func(a *Advance) error, run func(func(*store.WorkflowTx) error) error) (*Advance, error) {
	var a *Advance
	err := e.phpWaits(ctx, func(php *phpInTx) error {
		return run(func(tx *store.WorkflowTx) error {
			return php.run(func() error {
				t := *tr
				a = &Advance{e: e, tx: tx, trace: &t, dur: dur, php: php}
				if err := t.writeStart(tx); err != nil {
					return err
				}
				return body(a)
			})
		})
	})
	return a, err
}

// advance settles a job with its output in one transaction (advance_step).
// extra are log rows the worker writes after it (the second `completed`
// of a delay placeholder).
func (e *Engine) advance(ctx context.Context, job *store.JobRow, out *phpjson.Object, tr *jobTrace, dur time.Duration, extra ...store.LogRow) error {
	// The hot path of every step: batched with the other workers' steps.
	// It locks the step's workflow, then its job, and (on completion) a
	// run_workflow parent; the batch orders bodies by workflow id.
	a, err := e.stepTxIn(ctx, job.WorkflowID.Int64, job.ID, tr, dur, func(a *Advance) error {
		tx := a.tx
		a.runLocal = true
		if err := a.run(ctx, job.WorkflowID.Int64, job.ID, out); err != nil {
			return err
		}
		return tx.InsertLogs(extra...)
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	tr.next = a.chained.committed()
	err = e.afterCommit(ctx, a)
	// A local activity step enqueued here runs now, in this worker.
	e.runLocalChain(ctx, a.localNext)
	return err
}

// lock reads and locks the workflow and job rows.
func (a *Advance) lock(workflowID, jobID int64) error {
	var err error
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil {
		return err
	}
	if a.wf == nil {
		return runtimeErrorf("Workflow %d not found.", workflowID)
	}
	if a.job, err = a.tx.LockJob(jobID); err != nil {
		return err
	}
	if a.job == nil {
		return runtimeErrorf("Job %d not found.", jobID)
	}
	return nil
}

func (a *Advance) loadState() error {
	s, err := workflow.ParseStateString(a.wf.State)
	if err != nil {
		return fmt.Errorf("workflow %d: %w", a.wf.ID, err)
	}
	a.state, a.steps, a.current = s, s.Steps(), a.wf.CurrentStep
	return nil
}

// run is advance_step after BEGIN: the guards, then the path of the
// current step's type.
func (a *Advance) run(ctx context.Context, workflowID, jobID int64, out *phpjson.Object) error {
	if err := a.lock(workflowID, jobID); err != nil {
		return err
	}
	// Guard A: the workflow is no longer live.
	if !workflow.IsLive(a.wf.Status) {
		if workflow.IsCompletable(a.job.Status) {
			return a.tx.BuryJob(a.job.ID, msgAdvancedBefore)
		}
		return nil
	}
	// Guard B: the job was settled already (idempotent no-op).
	if !workflow.IsCompletable(a.job.Status) {
		return nil
	}
	if err := a.loadState(); err != nil {
		return err
	}
	// Guard C: the workflow moved on to another step.
	if a.job.StepIndex.Valid && int(a.job.StepIndex.Int64) != a.current {
		return a.tx.BuryJob(a.job.ID, msgAdvancedBefore)
	}
	step, ok := a.step(a.current)
	if ok {
		if k, isBranch := a.e.Kind(step.Type()).(Branch); isBranch {
			return k.CompleteBranch(ctx, a, step, out)
		}
	}
	return a.finalize(ctx, out, true)
}

func (a *Advance) step(i int) (workflow.Step, bool) {
	if i < 0 || i >= len(a.steps) {
		return workflow.Step{}, false
	}
	return a.steps[i], true
}

// finalize is finalize_step_completion: merge, compensation snapshot,
// budgets, _next_step, completion or the next step's jobs, log and event
// rows. logCompletion is false when the caller logs the job's `completed`
// itself (a for_each placeholder that settles at once).
func (a *Advance) finalize(ctx context.Context, out *phpjson.Object, logCompletion bool) error {
	stateBefore := a.state.Public()
	trace := takeStepTrace(out)
	out = stripTrace(out)
	mergeOutput(a.state, out, a.current)
	step, hasStep := a.step(a.current)
	pushCompensation(a.state, step, hasStep, a.current)
	bumpCounter(a.state, "cost_units", a.job.CostUnits)
	bumpCounter(a.state, "started_workflows", budgetDelta(out))
	bumpCounter(a.state, "transitions", 1)
	if err := assertBudget(a.state); err != nil {
		return err
	}

	next := a.current + 1
	if v, ok := out.Get(workflow.KeyNextStep); ok && !v.IsNull() {
		name := phpjson.ToString(v)
		i, found := workflow.FindStep(a.steps, name)
		if !found {
			return runtimeErrorf("Workflow %d: _next_step target '%s' not found.", a.wf.ID, name)
		}
		next = i
	}
	isLast := next >= a.wf.TotalSteps
	if err := a.writeStep(next, isLast); err != nil {
		return err
	}
	if err := a.tx.CompleteJob(a.job.ID); err != nil {
		return err
	}
	if logCompletion {
		if err := a.tx.InsertLogs(a.e.completedLog(a.job, a.wf.ID, a.current, a.dur)); err != nil {
			return err
		}
	}
	input, context, ok := a.trace.consume()
	if !ok || !phpjson.IsArray(input) {
		input = phpjson.ObjectValue(stateBefore)
	}
	if !phpjson.IsArray(context) {
		context = phpjson.Null()
	}
	input, output, context := trace.mergeInto(input, phpjson.ObjectValue(out), context)
	ev, err := newEvent(a.wf.ID, a.job, a.current, a.trace, a.job.Handler, workflow.EventStepCompleted).
		input(input).output(output).before(stateBefore).after(a.state.Public()).
		context(context).traceLists(trace).duration(a.dur).build()
	if err != nil {
		return err
	}
	if err := a.tx.InsertEvents(ev); err != nil {
		return err
	}
	return a.afterStep(ctx, next, isLast)
}

// writeStep persists the state and the new current step, completing the
// workflow when the step ran past the end.
func (a *Advance) writeStep(next int, isLast bool) error {
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	a.written = b
	if isLast {
		return a.tx.Complete(a.wf.ID, b, next)
	}
	return a.tx.Advance(a.wf.ID, b, next)
}

// afterStep logs workflow_completed, or enqueues the next step unless the
// workflow is paused (resume() enqueues it then).
func (a *Advance) afterStep(ctx context.Context, next int, isLast bool) error {
	if isLast {
		q := a.job.Queue
		if q == "" {
			q = "default"
		}
		if err := a.tx.InsertLogs(store.WorkflowLog(a.wf.ID, a.wf.Name, q, store.EventWorkflowCompleted)); err != nil {
			return err
		}
		// on_workflow_completed (the run_workflow parent resumes in this
		// transaction); waiting workflows are woken after the commit.
		return a.workflowCompleted(ctx, a.wf.ID, a.state)
	}
	if a.wf.Status == string(workflow.StatusPaused) {
		return nil
	}
	step, ok := a.step(next)
	if !ok {
		return a.failMissingStep(next)
	}
	if err := a.assertEnqueueBudget(a.state, step); err != nil {
		return err
	}
	return a.enqueue(ctx, step, next)
}

// missingStepMessage is the error a workflow fails with when it advances to
// step index, which its definition lacks: _steps holds fewer usable entries
// (objects or class strings, as the plugin keeps them) than total_steps.
func missingStepMessage(workflowID int64, index, usable, total int) string {
	return fmt.Sprintf("Workflow %d cannot run step %d: its _steps definition has %d usable steps of total_steps %d.",
		workflowID, index, usable, total)
}

// failMissingStep fails the workflow that advanced to a step its
// definition lacks. The plugin enqueues nothing there and leaves the
// workflow running, with no job, for ever; failing it tells the operator
// (docs/compat.md).
func (a *Advance) failMissingStep(next int) error {
	var jobID int64
	if a.job != nil {
		jobID = a.job.ID
	}
	return a.failLocked(jobID, missingStepMessage(a.wf.ID, next, len(a.steps), a.wf.TotalSteps))
}

// enqueue inserts the jobs of step index (enqueue_step_def).
func (a *Advance) enqueue(ctx context.Context, step workflow.Step, index int) error {
	if k, ok := a.e.Kind(step.Type()).(OwnJobs); ok {
		if handled, err := k.Enqueue(ctx, a, step, index); handled || err != nil {
			return err
		}
	}
	jobs, err := workflow.StepJobs(step, index, a.state.DispatchDefaults(), a.metadata())
	if err != nil {
		return err
	}
	if a.runLocal && len(jobs) == 1 && a.chainable(ctx, step, jobs[0]) {
		return a.enqueueChained(jobs[0], index)
	}
	return a.tx.InsertStepJobs(a.wf.ID, storeJobs(jobs))
}

// The step transaction as kinds see it. Every method acts inside the
// transaction; nothing is committed until the kind's hook returns nil.

// Engine returns the engine running the transaction.
func (a *Advance) Engine() *Engine { return a.e }

// Tx returns the transaction's statements.
func (a *Advance) Tx() *store.WorkflowTx { return a.tx }

// Workflow returns the locked workflow row.
func (a *Advance) Workflow() *store.WorkflowRow { return a.wf }

// Job returns the locked job row being settled (nil in a transaction that
// settles no job: a signal, a child's end).
func (a *Advance) Job() *store.JobRow { return a.job }

// State returns the state being written.
func (a *Advance) State() *workflow.State { return a.state }

// Steps returns the workflow's steps.
func (a *Advance) Steps() []workflow.Step { return a.steps }

// Current is the workflow's current step index.
func (a *Advance) Current() int { return a.current }

// Step returns step i, if the workflow has it.
func (a *Advance) Step(i int) (workflow.Step, bool) { return a.step(i) }

// Duration is the settled job's duration.
func (a *Advance) Duration() time.Duration { return a.dur }

// Finalize is finalize_step_completion: merge, compensation snapshot,
// budgets, _next_step, completion or the next step's jobs, log and event
// rows; logCompletion is false when the caller logs the job's `completed`.
func (a *Advance) Finalize(ctx context.Context, out *phpjson.Object, logCompletion bool) error {
	return a.finalize(ctx, out, logCompletion)
}

// MergeOutput merges a step's output into the state
// (merge_step_output_into_state) as the current step's.
func (a *Advance) MergeOutput(out *phpjson.Object) { mergeOutput(a.state, out, a.current) }

// CompletedLog is the settled job's `completed` log row.
func (a *Advance) CompletedLog() store.LogRow {
	return a.e.completedLog(a.job, a.wf.ID, a.current, a.dur)
}

// ConsumeTrace empties the job's trace buffer (consume_trace): the
// step_started input and the worker's context, ok=false once consumed.
func (a *Advance) ConsumeTrace() (input, context phpjson.Value, ok bool) { return a.trace.consume() }

// WriteStep persists the state and the new current step, completing the
// workflow when isLast.
func (a *Advance) WriteStep(next int, isLast bool) error { return a.writeStep(next, isLast) }

// AfterStep logs workflow_completed, or enqueues step next unless the
// workflow is paused.
func (a *Advance) AfterStep(ctx context.Context, next int, isLast bool) error {
	return a.afterStep(ctx, next, isLast)
}

// NewEvent starts the workflow_events row event of the settled job at the
// current step.
func (a *Advance) NewEvent(event string) *StepEvent {
	return &StepEvent{b: newEvent(a.wf.ID, a.job, a.current, a.trace, a.job.Handler, event)}
}

// StepEvent is a workflow_events row being built; the first encoding error
// is returned by Build.
type StepEvent struct{ b *eventBuilder }

// Input sets the input column.
func (s *StepEvent) Input(v phpjson.Value) *StepEvent { s.b.input(v); return s }

// Output sets the output column.
func (s *StepEvent) Output(v phpjson.Value) *StepEvent { s.b.output(v); return s }

// Before sets the state_before column.
func (s *StepEvent) Before(o *phpjson.Object) *StepEvent { s.b.before(o); return s }

// After sets the state_after column.
func (s *StepEvent) After(o *phpjson.Object) *StepEvent { s.b.after(o); return s }

// Context sets the context column.
func (s *StepEvent) Context(v phpjson.Value) *StepEvent { s.b.context(v); return s }

// Duration sets duration_ms.
func (s *StepEvent) Duration(d time.Duration) *StepEvent { s.b.duration(d); return s }

// Build returns the row.
func (s *StepEvent) Build() (store.WorkflowEvent, error) { return s.b.build() }

// Lock reads and locks the workflow and job rows.
func (a *Advance) Lock(workflowID, jobID int64) error { return a.lock(workflowID, jobID) }

// LoadState reads the locked workflow's state, steps and current step.
func (a *Advance) LoadState() error { return a.loadState() }

// AdvanceStep is advance_step after BEGIN: it locks the rows, applies the
// guards, then settles the job with out on its step kind's path.
func (a *Advance) AdvanceStep(ctx context.Context, workflowID, jobID int64, out *phpjson.Object) error {
	return a.run(ctx, workflowID, jobID, out)
}

// BuryStale buries a job its workflow moved past or stopped before it
// completed ("Workflow advanced before job completion.").
func (a *Advance) BuryStale(jobID int64) error { return a.tx.BuryJob(jobID, msgAdvancedBefore) }

// InsertChild writes a dispatched child workflow in the transaction.
func (a *Advance) InsertChild(d *workflow.Dispatch) (int64, error) { return a.e.insertChild(a.tx, d) }

// WorkflowCompleted records that the transaction completed workflow id
// with state and runs on_workflow_completed for its parent, if any.
func (a *Advance) WorkflowCompleted(ctx context.Context, id int64, state *workflow.State) error {
	return a.workflowCompleted(ctx, id, state)
}

// EnqueueFor checks step's budget and inserts the jobs of step index of
// workflow id (not the locked one: a parent the transaction resumed).
func (a *Advance) EnqueueFor(id int64, state *workflow.State, step workflow.Step, index int) error {
	if err := a.assertEnqueueBudget(state, step); err != nil {
		return err
	}
	return a.enqueueFor(id, state, step, index)
}

// FailLocked fails the locked workflow with message (Workflow::fail),
// burying jobID's job when it is not 0.
func (a *Advance) FailLocked(jobID int64, message string) error { return a.failLocked(jobID, message) }

// LockStep locks workflowID (when it still exists), loads its state and
// returns its step index; ok is false for a missing workflow, a missing
// step or a legacy string step.
func (a *Advance) LockStep(workflowID int64, index int) (step workflow.Step, ok bool, err error) {
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
		return workflow.Step{}, false, err
	}
	if s, same := a.claimed.Reuse(a.wf.State); same {
		// The state the job was claimed with is still the row's: decoding
		// it again would hold two copies (a for_each state over 1,000,000
		// items decodes to about 80 MB).
		a.state, a.steps, a.current = s, s.Steps(), a.wf.CurrentStep
	} else if err := a.loadState(); err != nil {
		return workflow.Step{}, false, err
	}
	step, ok = a.step(index)
	return step, ok && !step.IsLegacy(), nil
}

// Park is set_wait_context, the waiting status and the workflow_waiting
// event (engine_wait.go).
func (a *Advance) Park(ctx context.Context, p *ParkParams) error { return a.park(p) }

// Parked reports whether the transaction parked the workflow on a wait.
func (a *Advance) Parked() bool { return a.parked }

// SettleWait is settle_wait_step on the locked workflow (engine_wait.go).
func (a *Advance) SettleWait(ctx context.Context, index int, out *phpjson.Object) error {
	return a.settleWait(ctx, index, out)
}

// EnqueueLocal enqueues a local activity step to run in this worker right
// after the commit, claimed for it, when the worker takes local work
// (local_activity.go); handled is false when it does not, and the step is
// enqueued for the claim.
func (a *Advance) EnqueueLocal(ctx context.Context, step workflow.Step, index int) (handled bool, err error) {
	if !a.acceptsLocal(ctx) {
		return false, nil
	}
	return true, a.enqueueLocal(ctx, step, index)
}

// LockJob reads and locks the job row being settled.
func (a *Advance) LockJob(jobID int64) (*store.JobRow, error) {
	var err error
	a.job, err = a.tx.LockJob(jobID)
	return a.job, err
}

// PersistState writes the state, the workflow staying where it is.
func (a *Advance) PersistState() error { return a.persistState() }

// InsertStepJobs inserts jobs for the locked workflow.
func (a *Advance) InsertStepJobs(jobs []workflow.StepJob) error {
	return a.tx.InsertStepJobs(a.wf.ID, storeJobs(jobs))
}

// InsertStepJobsFor inserts jobs for workflowID, locked by the caller
// without its state (a for_each plan's later pages).
func (a *Advance) InsertStepJobsFor(workflowID int64, jobs []workflow.StepJob) error {
	return a.tx.InsertStepJobs(workflowID, storeJobs(jobs))
}

// StripTrace returns a step output without _queuety_trace.
func StripTrace(out *phpjson.Object) *phpjson.Object { return stripTrace(out) }

func (a *Advance) persistState() error {
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	return a.tx.SetState(a.wf.ID, b)
}

// assertEnqueueBudget is the budget check step's kind makes before the
// step is enqueued as the next one (Branch.CheckEnqueue).
func (a *Advance) assertEnqueueBudget(state *workflow.State, step workflow.Step) error {
	if k, ok := a.e.Kind(step.Type()).(Branch); ok {
		return k.CheckEnqueue(state, step)
	}
	return nil
}
