package engine

import (
	"context"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Signals (spec §6): a signal is a row of the signals table, stored
// whether or not anything waits for it and never consumed; a
// wait_for_signal step is satisfied by the stored rows whose payload
// matches (match_payload subset, correlation key).

// Signal is Queuety::signal (Workflow::handle_signal): it stores the
// signal and, in the same transaction, settles the workflow's current
// wait_for_signal step when the workflow waits for this name and the
// stored signals now satisfy it; then what waited on the workflow is woken
// if it completed. A missing workflow is not an error (the row is still
// stored). A nil payload is stored as [].
func (e *Engine) Signal(ctx context.Context, workflowID int64, name string, payload *phpjson.Object) error {
	if payload == nil {
		payload = phpjson.NewObject()
	}
	data, err := encodeObject(payload)
	if err != nil {
		return err
	}
	var a *Advance
	err = e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, trace: &jobTrace{consumed: true}, php: php}
		if err := tx.InsertSignal(workflowID, name, data); err != nil {
			return err
		}
		return a.resumeSignalWait(ctx, workflowID, name)
	})
	if err != nil {
		return err
	}
	return e.afterCommit(ctx, a)
}

// ResumeSignalWait re-evaluates a workflow parked in waiting_for_signal
// against its stored signals and settles the wait when they satisfy it. It
// is what the signal poller runs for signals another process (PHP's
// bridge, plain SQL) inserted without evaluating the wait. It reports
// whether the wait settled. When settling would break a budget the
// workflow fails (Signal returns the violation instead, as PHP throws it).
func (e *Engine) ResumeSignalWait(ctx context.Context, workflowID int64) (bool, error) {
	var a *Advance
	settled := false
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, trace: &jobTrace{consumed: true}, php: php}
		if err := a.resumeSignalWait(ctx, workflowID, ""); err != nil {
			return err
		}
		settled = a.settled
		return nil
	})
	if workflow.IsConstraintViolation(err) {
		terminal, ferr := e.failForViolation(ctx, workflowID, err)
		e.afterTerminal(ctx, terminal...)
		return true, ferr
	}
	if err != nil {
		return false, err
	}
	return settled, e.afterCommit(ctx, a)
}

// resumeSignalWait is the part of handle_signal after the insert: lock the
// workflow; when it is waiting_for_signal, its current step's kind settles
// the wait if it waits for name ("" = any of its names) and the stored
// signals satisfy it.
func (a *Advance) resumeSignalWait(ctx context.Context, workflowID int64, name string) error {
	var err error
	if a.wf, err = a.tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
		return err
	}
	if a.wf.Status != string(workflow.StatusWaitingForSignal) {
		return nil
	}
	if err := a.loadState(); err != nil {
		return err
	}
	step, ok := a.step(a.current)
	if !ok {
		return nil
	}
	if k, isWait := a.e.Kind(step.Type()).(Wait); isWait {
		_, err := k.Wake(ctx, a, &Wake{Cause: WakeSignal, Index: a.current, Step: step, Signal: name})
		return err
	}
	return nil
}
