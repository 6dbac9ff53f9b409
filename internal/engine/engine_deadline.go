package engine

import (
	"context"
	"fmt"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// msgDeadlineExceeded is the error_message of a workflow failed by its
// deadline.
const msgDeadlineExceeded = "Deadline exceeded"

// CheckDeadlines is Workflow::check_deadlines: every running workflow
// whose deadline_at passed (waiting and paused ones never hit theirs, as
// in PHP) gets its on_deadline handler called with the public state
// (outside any transaction; its error is ignored), then, if still running
// under lock, fails with "Deadline exceeded" (workflow_failed with job 0,
// its other jobs buried) and logs workflow_deadline_exceeded. After the
// commit the compensations run (reason "deadline") when it opted in, and
// waiters are woken. It returns how many workflows it failed.
func (e *Engine) CheckDeadlines(ctx context.Context) (int, error) {
	const slice = 200
	count := 0
	for {
		ids, err := e.store.OverdueWorkflows(ctx, slice)
		if err != nil {
			return count, err
		}
		failed := 0
		for _, id := range ids {
			ok, err := e.failOverdue(ctx, id)
			if err != nil {
				return count, fmt.Errorf("deadline of workflow %d: %w", id, err)
			}
			if ok {
				count++
				failed++
			}
		}
		// A slice in which nothing could be failed (raced) would repeat.
		if len(ids) < slice || failed == 0 {
			return count, nil
		}
	}
}

func (e *Engine) failOverdue(ctx context.Context, workflowID int64) (bool, error) {
	row, err := e.store.GetWorkflow(ctx, workflowID)
	if err != nil {
		return false, err
	}
	if row.Status != string(workflow.StatusRunning) {
		return false, nil
	}
	if state, err := workflow.ParseState([]byte(row.State)); err == nil {
		if classes := e.phpOnly(state, "deadline"); len(classes) > 0 {
			// PHP workers' check_deadlines runs its on_deadline handler
			// and compensations; failing it here would skip them.
			return false, e.noteLeftToPHP(ctx, workflowID, "deadline", classes)
		}
		if ref, ok := state.OnDeadline(); ok {
			_ = e.callLifecycleHandler(ctx, ref, state.Public()) // PHP ignores its failure
		}
	}
	var a *Advance
	failed := false
	err = e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		failed = false
		a = &Advance{e: e, tx: tx, php: php}
		var err error
		if a.wf, err = tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
			return err
		}
		if a.wf.Status != string(workflow.StatusRunning) {
			return nil
		}
		if err := a.loadState(); err != nil {
			return err
		}
		if err := a.failLocked(0, msgDeadlineExceeded); err != nil {
			return err
		}
		failed = true
		return tx.InsertLogs(store.WorkflowLog(workflowID, a.wf.Name, stateQueue(a.state), store.LogWorkflowDeadlineExceeded))
	})
	if err != nil || !failed {
		return false, err
	}
	defer e.afterTerminal(ctx, workflowID)
	if a.compensate {
		return true, e.runCompensations(ctx, workflowID, a.state, "deadline")
	}
	return true, nil
}
