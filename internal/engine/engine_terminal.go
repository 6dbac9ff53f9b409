package engine

import (
	"context"
	"database/sql"
	"fmt"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// afterCommit is what every engine transaction runs once it committed:
// the compensations a failure asked for, then the wake-ups of what waited
// on the workflows it made terminal.
func (e *Engine) afterCommit(ctx context.Context, a *Advance) error {
	err := e.afterFailure(ctx, a)
	if a != nil {
		e.afterTerminal(ctx, a.terminal...)
	}
	return err
}

// afterTerminal runs after a transaction in which workflows became terminal
// (completed, failed, cancelled, deadline exceeded) has committed: it wakes
// what waits on them, as Queuety's on_workflow_completed and
// reconcile_waiting_for_workflows_for_dependency do. Every terminal
// transition calls it post-commit.
//
// For each id, and for every workflow a wake-up makes terminal in turn:
// the run_workflow parent (resumed when the child completed, if the
// child's own transaction did not already; failed when the child failed or
// was cancelled, which PHP never does), then every workflow with a
// workflow_dependencies row on it, re-evaluated under its lock.
//
// Errors are not returned: the terminal transition itself committed, and
// the wait sweeper (WaitSweeper) re-evaluates every waiting workflow, so a
// wake-up lost here is retried there.
func (e *Engine) afterTerminal(ctx context.Context, workflowIDs ...int64) {
	seen := map[int64]bool{}
	queue := append([]int64(nil), workflowIDs...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id <= 0 || seen[id] {
			continue
		}
		seen[id] = true
		more, err := e.wakeDependents(ctx, id)
		if err != nil {
			e.wakeError(id, err)
		}
		queue = append(queue, more...)
	}
}

// wakeError hands a post-commit wake-up's error to EngineConfig.OnWakeError
// (without one it is dropped; the wait sweeper retries the wake-up).
func (e *Engine) wakeError(id int64, err error) {
	if e.wakeErr != nil {
		e.wakeErr(id, err)
	}
}

// wakeDependents is the body of afterTerminal for one terminal workflow;
// it returns the workflows that became terminal while waking.
func (e *Engine) wakeDependents(ctx context.Context, id int64) ([]int64, error) {
	facts, found, err := e.wakes.get(ctx, id)
	if err != nil || !found {
		return nil, err
	}
	status := facts.Status
	var terminal []int64
	if isTerminalStatus(status) && facts.HasParent {
		t, err := e.settleParent(ctx, id)
		if err != nil {
			return terminal, err
		}
		terminal = append(terminal, t...)
	}
	for _, w := range facts.Waiters {
		t, err := e.reconcileWaiter(ctx, w.WorkflowID, w.StepIndex, id, status)
		if err != nil {
			return terminal, err
		}
		terminal = append(terminal, t...)
	}
	return terminal, nil
}

func isTerminalStatus(s string) bool {
	return s == string(workflow.StatusCompleted) || s == string(workflow.StatusFailed) || s == string(workflow.StatusCancelled)
}

// reconcileWaiter is the body of reconcile_waiting_for_workflows_for_dependency
// for one waiting workflow at step, in its own transaction. dependency is
// the workflow that became terminal (0 when the sweeper re-evaluates).
// It returns the workflows the transaction made terminal.
func (e *Engine) reconcileWaiter(ctx context.Context, workflowID int64, step int, dependency int64, depStatus string) ([]int64, error) {
	var a *Advance
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, trace: &jobTrace{consumed: true}, php: php}
		if dependency > 0 && depStatus == string(workflow.StatusCompleted) {
			if err := tx.MarkDependencySatisfied(workflowID, step, dependency); err != nil {
				return err
			}
		}
		var err error
		if a.wf, err = tx.LockWorkflow(workflowID); err != nil {
			return err
		}
		if a.wf == nil || a.wf.Status != string(workflow.StatusWaitingForWorkflows) || a.wf.CurrentStep != step {
			return tx.ClearDependencies(workflowID, step)
		}
		if err := a.loadState(); err != nil {
			return err
		}
		s, ok := a.step(step)
		if k, isWait := a.e.Kind(s.Type()).(Wait); ok && isWait {
			if handled, err := k.Wake(ctx, a, &Wake{Cause: WakeDependency, Index: step, Step: s}); handled || err != nil {
				return err
			}
		}
		if err := tx.ClearDependencies(workflowID, step); err != nil {
			return err
		}
		a.state.Delete(workflow.KeyWait)
		a.state.Delete(workflow.KeyWaitingForSignal)
		return a.persistState()
	})
	if workflow.IsConstraintViolation(err) {
		return e.failForViolation(ctx, workflowID, err)
	}
	if err != nil {
		return nil, err
	}
	if err := e.afterFailure(ctx, a); err != nil {
		return a.terminal, err
	}
	return a.terminal, nil
}

// workflowCompleted records that the locked transaction completed
// workflow id with state, and runs on_workflow_completed: a run_workflow
// parent waiting at the child's step gets the child's public keys and moves
// to its next step (or completes, and so on upward), in the same
// transaction.
func (a *Advance) workflowCompleted(ctx context.Context, id int64, state *workflow.State) error {
	a.terminal = append(a.terminal, id)
	var parentID, parentStep sql.NullInt64
	if a.wf != nil && a.wf.ID == id {
		// The workflow row this transaction locked already says.
		parentID, parentStep = a.wf.ParentWorkflowID, a.wf.ParentStepIndex
	} else {
		var err error
		if parentID, parentStep, err = a.tx.ParentOf(id); err != nil {
			return err
		}
	}
	if !parentID.Valid {
		return nil
	}
	parent, err := a.tx.LockWorkflow(parentID.Int64)
	if err != nil || parent == nil {
		return err
	}
	return a.resumeParent(ctx, parent, int(parentStep.Int64), state)
}

// resumeParent is the parent half of on_workflow_completed: the step
// kind of a live parent still at the child's step resumes it. Unlike PHP
// a parent that is no longer live or has moved on is left alone (PHP also
// writes into a cancelled parent, and could move one twice).
func (a *Advance) resumeParent(ctx context.Context, parent *store.WorkflowRow, step int, child *workflow.State) error {
	if !workflow.IsLive(parent.Status) || parent.CurrentStep != step {
		return nil
	}
	pstate, err := workflow.ParseState([]byte(parent.State))
	if err != nil {
		return fmt.Errorf("workflow %d: %w", parent.ID, err)
	}
	s, ok := pstate.Step(step)
	if !ok {
		return nil
	}
	if k, isParent := a.e.Kind(s.Type()).(Parent); isParent {
		return k.ChildCompleted(ctx, a, &ChildCompleted{Parent: parent, State: pstate, Step: s, Index: step, Child: child})
	}
	return nil
}

// enqueueFor inserts the jobs of step index of workflow id.
func (a *Advance) enqueueFor(id int64, state *workflow.State, step workflow.Step, index int) error {
	jobs, err := workflow.StepJobs(step, index, state.DispatchDefaults(), a.metadata())
	if err != nil {
		return err
	}
	return a.tx.InsertStepJobs(id, storeJobs(jobs))
}

// settleParent handles the run_workflow parent of a terminal child: a
// completed child resumes it (when the child's transaction did not), a
// failed or cancelled one fails it. PHP leaves the parent waiting forever
// on a failed child (docs/compat.md).
func (e *Engine) settleParent(ctx context.Context, childID int64) ([]int64, error) {
	var a *Advance
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, trace: &jobTrace{consumed: true}, php: php}
		parentID, parentStep, err := tx.ParentOf(childID)
		if err != nil || !parentID.Valid {
			return err
		}
		child, err := tx.LockWorkflow(childID)
		if err != nil || child == nil {
			return err
		}
		parent, err := tx.LockWorkflow(parentID.Int64)
		if err != nil || parent == nil || !workflow.IsLive(parent.Status) || parent.CurrentStep != int(parentStep.Int64) {
			return err
		}
		switch child.Status {
		case string(workflow.StatusCompleted):
			cs, err := workflow.ParseState([]byte(child.State))
			if err != nil {
				return err
			}
			return a.resumeParent(ctx, parent, int(parentStep.Int64), cs)
		case string(workflow.StatusFailed), string(workflow.StatusCancelled):
			a.wf = parent
			if err := a.loadState(); err != nil {
				return err
			}
			s, ok := a.step(a.current)
			if !ok {
				return nil
			}
			if k, isParent := a.e.Kind(s.Type()).(Parent); isParent {
				return k.ChildFailed(ctx, a, child)
			}
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := e.afterFailure(ctx, a); err != nil {
		return a.terminal, err
	}
	return a.terminal, nil
}

// failForViolation fails a workflow whose wait could not settle because
// settling broke a budget. PHP throws out of the waking process instead
// (leaving the waiter parked, to be retried by nobody); here the wake-up
// runs in the background, so the workflow fails as a step breaking its
// budget does.
func (e *Engine) failForViolation(ctx context.Context, workflowID int64, violation error) ([]int64, error) {
	var a *Advance
	err := e.workflowTx(ctx, func(tx *store.WorkflowTx, php *phpInTx) error {
		a = &Advance{e: e, tx: tx, trace: &jobTrace{consumed: true}, php: php}
		var err error
		if a.wf, err = tx.LockWorkflow(workflowID); err != nil || a.wf == nil {
			return err
		}
		if err := a.loadState(); err != nil {
			return err
		}
		return a.failLocked(0, violation.Error())
	})
	if err != nil {
		return nil, err
	}
	if err := e.afterFailure(ctx, a); err != nil {
		return a.terminal, err
	}
	return a.terminal, nil
}
