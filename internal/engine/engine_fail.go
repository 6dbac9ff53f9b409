package engine

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// failLocked is mark_workflow_failed_locked on the locked workflow: only a
// live workflow fails; then workflow_failed is logged (job_id = the failing
// job, handler "", queue "default") and every other active job of the
// workflow is buried with the same message.
func (a *Advance) failLocked(jobID int64, message string) error {
	b, err := a.state.Encode()
	if err != nil {
		return err
	}
	return a.markFailed(jobID, b, message, a.state.CompensateOnFailure())
}

// failCorrupt is failLocked for a workflow whose state cannot be read: it
// fails with message (the buried step's error, which says why) and keeps
// the stored state bytes, where PHP would write its empty decoding over
// them; no compensation can be read, so none runs (docs/compat.md).
func (a *Advance) failCorrupt(jobID int64, message string) error {
	return a.markFailed(jobID, []byte(a.wf.State), message, false)
}

// markFailed writes the failure with state, then, when the row changed,
// the workflow_failed log row and the burial of the other active jobs.
func (a *Advance) markFailed(jobID int64, state []byte, message string, compensate bool) error {
	changed, err := a.tx.MarkFailed(a.wf.ID, state, message)
	if err != nil || !changed {
		return err
	}
	a.compensate = compensate
	a.terminal = append(a.terminal, a.wf.ID)
	l := store.WorkflowLog(a.wf.ID, "", "default", store.EventWorkflowFailed)
	l.JobID = store.Int(jobID)
	l.ErrorMessage = store.String(message)
	if err := a.tx.InsertLogs(l); err != nil {
		return err
	}
	if err := a.tx.BuryWorkflowJobs(a.wf.ID, message, jobID); err != nil {
		return err
	}
	// A for_each plan under way ends with its buried placeholder.
	return a.tx.DeleteForEachPlansOf(a.wf.ID)
}

// Fail is Workflow::fail: the workflow fails with message because job
// failed for good; then its compensations (compensate_on_failure) run and
// what waits on it is woken.
func (e *Engine) Fail(ctx context.Context, workflowID, jobID int64, message string) error {
	var a *Advance
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, php: php}
		var err error
		if a.wf, err = tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
			return err
		}
		if err := a.loadState(); err != nil {
			if errors.Is(err, workflow.ErrCorruptState) {
				return a.failCorrupt(jobID, message)
			}
			return err
		}
		return a.failLocked(jobID, message)
	})
	if err != nil {
		return err
	}
	return e.afterCommit(ctx, a)
}

// branchFailed is handle_for_each_terminal_failure's transaction: the
// branch job is buried and its step's kind records the failure; the
// workflow fails only when the kind says the step can no longer complete.
func (e *Engine) branchFailed(ctx context.Context, workflowID, jobID int64, message string) (failed bool, err error) {
	var a *Advance
	err = e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		failed = false
		a = &Advance{e: e, tx: tx, php: php}
		if a.wf, err = tx.LockWorkflow(workflowID); err != nil {
			return err
		}
		if a.job, err = tx.LockJob(jobID); err != nil {
			return err
		}
		if a.wf == nil || a.job == nil || !workflow.IsCompletable(a.job.Status) {
			return nil
		}
		if err := tx.BuryJob(jobID, message); err != nil {
			return err
		}
		if err := a.loadState(); err != nil {
			return err
		}
		if !a.job.StepIndex.Valid || int(a.job.StepIndex.Int64) != a.current || !workflow.IsLive(a.wf.Status) {
			return nil
		}
		step, ok := a.step(a.current)
		k, isBranch := a.e.Kind(step.Type()).(Branch)
		if !ok || !isBranch {
			return nil
		}
		failed, err = k.FailBranch(ctx, a, step, message)
		return err
	})
	if err != nil {
		return failed, err
	}
	return failed, e.afterCommit(ctx, a)
}

// Failure is the worker's decision about a failed step attempt.
type Failure struct {
	// Message, Class and Trace go to the log rows and the step_failed
	// event (error_message, error_class, error_trace).
	Message, Class, Trace string
	// Terminal: no attempts left. A ConstraintViolation is always terminal.
	Terminal bool
	// RetryDelay is the backoff before the next attempt.
	RetryDelay time.Duration
}

// stepFailed records a failed attempt (the worker's catch block): the
// step_failed event, then a retry (`failed`, `retried`) or a burial
// (`buried`) followed by the workflow's failure or, for a for_each branch,
// the branch's terminal failure.
func (e *Engine) stepFailed(ctx context.Context, job *store.JobRow, state *workflow.State, tr *jobTrace, f Failure, dur time.Duration) error {
	input, tctx, ok := tr.consume()
	if !ok || input.IsNull() {
		input = tr.input
	}
	if !phpjson.IsArray(tctx) {
		tctx = tr.context
	}
	errObj := phpjson.NewObject()
	errObj.Set("message", phpjson.String(f.Message))
	errObj.Set("class", phpjson.String(f.Class))
	errObj.Set("trace", phpjson.String(f.Trace))
	step := int(job.StepIndex.Int64)
	ev, err := newEvent(job.WorkflowID.Int64, job, step, tr, job.Handler, workflow.EventStepFailed).
		input(input).before(tr.public).after(tr.public).context(tctx).
		errorValue(phpjson.ObjectValue(errObj)).duration(dur).build()
	if err != nil {
		return err
	}
	// PHP treats every job of a for_each step as a branch here, so a failed
	// placeholder left the workflow running with nothing to run; only real
	// branches (with __for_each) are branches here (docs/compat.md).
	s, hasStep := state.Step(step)
	item, isItem := e.stepItem(s, job.Payload)
	forEach := hasStep && isItem && item.Indexed

	base := jobLog(job, job.WorkflowID.Int64, step, store.EventFailed)
	base.Queue = job.Queue
	base.Attempt = store.Int(int64(job.Attempts))
	base.DurationMS = store.Int(max(0, dur.Milliseconds()))
	base.ErrorMessage = store.String(f.Message)
	base.ErrorClass = store.String(f.Class)
	base.ErrorTrace = store.String(f.Trace)
	err = e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		if err := tr.writeStart(tx); err != nil {
			return err
		}
		if err := tx.InsertEvents(ev); err != nil {
			return err
		}
		if !f.Terminal {
			if err := tx.RetryJob(job.ID, f.RetryDelay); err != nil {
				return err
			}
			retried := base
			retried.Event = store.EventRetried
			retried.DurationMS, retried.ErrorMessage, retried.ErrorClass, retried.ErrorTrace = sql.NullInt64{}, noString(), noString(), noString()
			return tx.InsertLogs(base, retried)
		}
		if !forEach {
			if err := tx.BuryJob(job.ID, f.Message); err != nil {
				return err
			}
		}
		buried := base
		buried.Event = store.EventBuried
		return tx.InsertLogs(buried)
	})
	if err != nil {
		return err
	}
	tr.startWritten()
	if !f.Terminal {
		e.noteStepFailure(job, f, false)
		return nil
	}
	if forEach {
		failed, err := e.branchFailed(ctx, job.WorkflowID.Int64, job.ID, f.Message)
		e.noteStepFailure(job, f, failed && err == nil)
		return err
	}
	err = e.Fail(ctx, job.WorkflowID.Int64, job.ID, f.Message)
	e.noteStepFailure(job, f, err == nil)
	return err
}
