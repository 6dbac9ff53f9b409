package steps

import (
	"github.com/queuety-go/queuety/internal/phpjson"

	"context"
	"database/sql"
	"fmt"

	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// runWorkflow is a run_workflow step (builder: RunWorkflow; spec §5): its
// placeholder starts one nested child (parent columns set) and parks the
// parent at the step until the child ends (on_workflow_completed,
// engine_terminal.go).
type runWorkflow struct{}

func (runWorkflow) Type() workflow.StepType { return workflow.StepRunWorkflow }

func (runWorkflow) Placeholder() string { return workflow.HandlerRunWorkflow }

// Admit runs every claimed job.
func (runWorkflow) Admit(context.Context, *engine.AdmitParams) engine.Admission {
	return engine.Admission{}
}

// RunPlaceholder runs __queuety_run_workflow (handle_run_workflow_step):
// the child is dispatched with the parent's public state and the parent
// columns, the placeholder is completed and logged, and the parent stays
// at the step with no job until the child completes. Unlike PHP, a
// placeholder of a workflow that is no longer live or has moved on starts
// no child (it is buried as advance_step's guards bury stale jobs).
func (runWorkflow) RunPlaceholder(ctx context.Context, r *engine.Run) error {
	job, index := r.Job(), r.Index()
	_, err := r.Transact(ctx, func(a *engine.Advance) error {
		tx := a.Tx()
		if err := a.Lock(job.WorkflowID.Int64, job.ID); err != nil {
			return err
		}
		if err := a.LoadState(); err != nil {
			return err
		}
		step, ok := a.Step(index)
		if !ok || step.IsLegacy() || phpjson.ToString(field(step, "type")) != string(workflow.StepRunWorkflow) {
			return runtimeErrorf("Step %d is not a run_workflow definition.", index)
		}
		if !workflow.IsLive(a.Workflow().Status) || a.Workflow().CurrentStep != index {
			if workflow.IsCompletable(a.Job().Status) {
				return a.BuryStale(job.ID)
			}
			return nil
		}
		sd, err := step.Definition()
		if err != nil {
			return err
		}
		def := sd.(*workflow.RunWorkflowStep)
		d, err := def.ChildDefinition(a.State()).Dispatch(a.State().Public(), workflow.DefinitionDispatchOptions{
			ParentWorkflowID: sql.NullInt64{Int64: a.Workflow().ID, Valid: true},
			ParentStepIndex:  sql.NullInt64{Int64: int64(index), Valid: true},
			HandlerMetadata:  a.Metadata(),
		})
		if err != nil {
			return err
		}
		if _, err := a.InsertChild(d); err != nil {
			return err
		}
		if err := tx.CompleteJobAny(job.ID); err != nil {
			return err
		}
		return tx.InsertLogs(r.CompletedLog(r.Elapsed()))
	})
	return err
}

// ChildCompleted is the parent half of on_workflow_completed, on a live
// parent still at the step: the child's public keys are merged into the
// parent, which moves to its next step (or completes, and so on upward),
// in the same transaction.
func (runWorkflow) ChildCompleted(ctx context.Context, a *engine.Advance, c *engine.ChildCompleted) error {
	parent, pstate, s, step, child := c.Parent, c.State, c.Step, c.Index, c.Child
	for k, v := range child.Object().All() {
		if !workflow.IsReserved(k) {
			pstate.Set(k, v)
		}
	}
	engine.PushCompensation(pstate, s, step)
	engine.BumpCounter(pstate, "transitions", 1)
	if err := engine.AssertBudget(pstate); err != nil {
		return err
	}
	next := step + 1
	b, err := pstate.Encode()
	if err != nil {
		return err
	}
	if next >= parent.TotalSteps {
		if err := a.Tx().Complete(parent.ID, b, next); err != nil {
			return err
		}
		if err := a.Tx().InsertLogs(store.WorkflowLog(parent.ID, parent.Name, pstate.Queue(), store.EventWorkflowCompleted)); err != nil {
			return err
		}
		return a.WorkflowCompleted(ctx, parent.ID, pstate)
	}
	if err := a.Tx().Advance(parent.ID, b, next); err != nil {
		return err
	}
	if parent.Status == string(workflow.StatusPaused) {
		return nil
	}
	ns, ok := pstate.Step(next)
	if !ok {
		return nil
	}
	return a.EnqueueFor(parent.ID, pstate, ns, next)
}

// ChildFailed fails the parent of a failed or cancelled child (PHP leaves
// it waiting forever, docs/compat.md).
func (runWorkflow) ChildFailed(ctx context.Context, a *engine.Advance, child *store.WorkflowRow) error {
	return a.FailLocked(0, childFailureMessage(child))
}

func childFailureMessage(child *store.WorkflowRow) string {
	if child.Status == string(workflow.StatusCancelled) {
		return fmt.Sprintf("Child workflow %d was cancelled.", child.ID)
	}
	msg := "Child workflow " + fmt.Sprint(child.ID) + " failed"
	if child.ErrorMessage.Valid && child.ErrorMessage.String != "" {
		return msg + ": " + child.ErrorMessage.String
	}
	return msg + "."
}
