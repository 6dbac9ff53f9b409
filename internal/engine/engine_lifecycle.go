package engine

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Lifecycle operations on a workflow (spec §7): Cancel, Pause, Resume,
// Retry. Deadlines are in engine_deadline.go, the stale sweep of step jobs
// in engine_stale.go.

// Message a cancel buries the workflow's active jobs with.
const msgWorkflowCancelled = "Workflow cancelled"

func lifecycleErrorf(format string, args ...any) error {
	return &workflow.LifecycleError{Message: fmt.Sprintf(format, args...)}
}

// notFound wraps store.ErrWorkflowNotFound.
func notFound(id int64) error { return fmt.Errorf("workflow %d: %w", id, store.ErrWorkflowNotFound) }

// stateQueue is $state['_queue'] ?? 'default', as the lifecycle logs use it.
func stateQueue(s *workflow.State) string {
	if v, ok := s.Get(workflow.KeyQueue); ok && !v.IsNull() {
		return phpjson.ToString(v)
	}
	return "default"
}

// Cancel is Workflow::cancel: refused for completed or cancelled
// workflows; otherwise, in one transaction, the workflow becomes
// cancelled (completed_at = NOW()), its pending and processing jobs are
// buried ("Workflow cancelled") and workflow_cancelled is logged. After
// the commit the compensation stack runs (reason "cancel"), the state is
// written with _compensated and _compensation_cause, the on_cancel handler
// gets the public state, and waiters are woken. A workflow whose state
// cannot be read is cancelled the same way but runs nothing after the
// commit (its compensations and on_cancel are in that state), keeps its
// stored bytes and gets a debug log row saying so (docs/compat.md).
func (e *Engine) Cancel(ctx context.Context, workflowID int64) error {
	var state *workflow.State
	var corrupt error
	err := e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error {
		wf, err := tx.LockWorkflow(workflowID)
		if err != nil {
			return err
		}
		if wf == nil {
			return notFound(workflowID)
		}
		if wf.Status == string(workflow.StatusCompleted) || wf.Status == string(workflow.StatusCancelled) {
			return lifecycleErrorf("Workflow %d is already %s.", workflowID, wf.Status)
		}
		state, corrupt = workflow.ParseState([]byte(wf.State))
		if corrupt != nil {
			state = workflow.NewState(nil) // as PHP decodes it: no queue, no compensations
		}
		if classes := e.phpOnly(state, "cancel"); len(classes) > 0 {
			return &workflow.NeedsPHPError{WorkflowID: workflowID, Action: "cancel", Classes: classes}
		}
		if err := tx.CancelWorkflowRow(workflowID); err != nil {
			return err
		}
		if err := tx.BuryWorkflowJobs(workflowID, msgWorkflowCancelled, 0); err != nil {
			return err
		}
		if err := tx.DeleteForEachPlansOf(workflowID); err != nil {
			return err
		}
		logs := []store.LogRow{store.WorkflowLog(workflowID, wf.Name, stateQueue(state), store.LogWorkflowCancelled)}
		if corrupt != nil {
			l, err := corruptCancelLog(workflowID, wf.Name, corrupt)
			if err != nil {
				return err
			}
			logs = append(logs, l)
		}
		return tx.InsertLogs(logs...)
	})
	if err != nil {
		return err
	}
	defer e.afterTerminal(ctx, workflowID)
	if corrupt != nil {
		// Its compensations and on_cancel handler are in the state that
		// cannot be read: nothing to run, and the stored bytes are kept
		// for whoever repairs the row.
		return nil
	}
	if err := e.runCompensations(ctx, workflowID, state, "cancel"); err != nil {
		return err
	}
	ref, ok := state.OnCancel()
	if !ok {
		return nil
	}
	if herr := e.callLifecycleHandler(ctx, ref, state.Public()); herr != nil {
		l := store.WorkflowLog(workflowID, ref.Class, "default", store.LogDebug)
		l.ErrorMessage = store.String(herr.Error())
		b, err := encodeObject(phpjson.NewObject().Set("type", phpjson.String("cancel_handler_failed")))
		if err != nil {
			return err
		}
		l.Context = store.String(string(b))
		return e.store.WorkflowTx(ctx, func(tx *store.WorkflowTx) error { return tx.InsertLogs(l) })
	}
	return nil
}

// corruptCancelLog is the debug log row of a cancel that ran no
// compensation because the workflow's state cannot be read.
func corruptCancelLog(workflowID int64, name string, corrupt error) (store.LogRow, error) {
	l := store.WorkflowLog(workflowID, name, "default", store.LogDebug)
	l.ErrorMessage = store.String("Workflow cancelled without compensation or on_cancel: its state cannot be read (" + corrupt.Error() + ").")
	b, err := encodeObject(phpjson.NewObject().Set("type", phpjson.String("cancel_state_unreadable")))
	if err != nil {
		return store.LogRow{}, err
	}
	l.Context = store.String(string(b))
	return l, nil
}

// callLifecycleHandler runs an on_cancel / on_deadline handler:
// handle(public state[, payload]). Go registers them as compensations
// (Handlers.Compensation), which have that signature; a class with no Go
// handler runs in the CallableRunner when there is one, else is skipped,
// as PHP skips a class that does not exist.
func (e *Engine) callLifecycleHandler(ctx context.Context, ref workflow.HandlerRef, public *phpjson.Object) error {
	fn, ok := e.lookupCompensation(ref.Class)
	if !ok {
		return nil
	}
	return callCompensation(ctx, fn, workflow.CompensationEntry{Handler: ref.Class, Payload: ref.Payload, State: public})
}

// Pause is Workflow::pause: a running workflow becomes paused (the step in
// flight finishes, the next one is not enqueued). workflow_paused is
// logged whether or not the row changed, as in PHP; changed is false when
// the workflow was not running.
func (e *Engine) Pause(ctx context.Context, workflowID int64) (changed bool, err error) {
	if _, err := e.store.GetWorkflow(ctx, workflowID); err != nil {
		return false, err
	}
	return e.store.PauseRunningWorkflow(ctx, workflowID)
}

// lockInStatus locks a workflow for a lifecycle operation that needs it in
// status want; notWant is the error message (with the id) otherwise.
func (e *Engine) lockInStatus(tx *store.WorkflowTx, php *phpInTx, workflowID int64, want workflow.Status, notWant string) (*Advance, error) {
	a := &Advance{e: e, tx: tx, php: php}
	var err error
	if a.wf, err = tx.LockWorkflow(workflowID); err != nil {
		return nil, err
	}
	if a.wf == nil {
		return nil, notFound(workflowID)
	}
	if a.wf.Status != string(want) {
		return nil, lifecycleErrorf(notWant, workflowID)
	}
	return a, nil
}

// Resume is Workflow::resume: a paused workflow with steps left becomes
// running and its current step is enqueued again (a step that was in
// flight when it paused may so run twice; the late one is buried by guard
// C), with workflow_resumed logged. Unlike PHP, the row is checked under
// lock.
func (e *Engine) Resume(ctx context.Context, workflowID int64) error {
	return e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a, err := e.lockInStatus(tx, php, workflowID, workflow.StatusPaused, "Workflow %d is not paused.")
		if err != nil {
			return err
		}
		if a.wf.CurrentStep >= a.wf.TotalSteps {
			return lifecycleErrorf("Workflow %d has no more steps.", workflowID)
		}
		if err := a.loadState(); err != nil {
			return err
		}
		step, ok := a.step(a.current)
		if !ok {
			return runtimeErrorf("No step handler found for step %d.", a.current)
		}
		if err := tx.ResumePausedWorkflow(workflowID); err != nil {
			return err
		}
		if err := a.enqueue(ctx, step, a.current); err != nil {
			return err
		}
		return tx.InsertLogs(store.WorkflowLog(workflowID, "", "default", store.LogWorkflowResumed))
	})
}

// Retry is Workflow::retry: a failed workflow that was not compensated
// runs its current (failed) step again: status running, failure cleared,
// the step's jobs enqueued (every branch of a parallel step). A for_each
// step keeps its results: its failures are cleared and settled reset, and
// the placeholder re-dispatches only the items without a result. PHP
// writes no log row for it.
func (e *Engine) Retry(ctx context.Context, workflowID int64) error {
	return e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a, err := e.lockInStatus(tx, php, workflowID, workflow.StatusFailed, "Workflow %d is not in failed state.")
		if err != nil {
			return err
		}
		if err := a.loadState(); err != nil {
			return err
		}
		if _, done := a.state.Compensated(); done {
			return lifecycleErrorf("Workflow %d has already been compensated and cannot be retried.", workflowID)
		}
		step, ok := a.step(a.current)
		if !ok {
			return lifecycleErrorf("No step handler found for step %d.", a.current)
		}
		if err := tx.RetryFailedWorkflow(workflowID); err != nil {
			return err
		}
		if k, ok := e.Kind(step.Type()).(Branch); ok {
			if err := k.Retry(ctx, a, step); err != nil {
				return err
			}
		}
		return a.enqueue(ctx, step, a.current)
	})
}
