package engine

import (
	"context"
	"errors"

	"github.com/queuety-go/queuety/workflow"
)

// What PHP lacks (DESIGN.md §4, spec §4.8, §11): waits are woken only by
// the process that unblocks them, so a wake-up that raced a commit, a
// dependency finished by a runtime that does not reconcile, or a signal row
// inserted without evaluating the wait would leave a workflow parked for
// ever. The sweeper and the signal poller (run as services by `work`)
// re-evaluate parked workflows with the same locked transactions.

// sweepPage is how many rows one sweeper query reads.
const sweepPage = 200

// SweepWaiting re-evaluates every waiting_for_workflows workflow (the body
// of reconcile_waiting_for_workflows_for_dependency for the workflow's
// current step, whatever its dependency rows say), and settles
// run_workflow parents whose newest child is terminal while they still
// wait at its step with no job; then wakes what those made terminal.
func (e *Engine) SweepWaiting(ctx context.Context) (workflow.SweepResult, error) {
	var res workflow.SweepResult
	var errs []error
	for after := int64(0); ; {
		waiters, err := e.store.WaitingForWorkflows(ctx, after, sweepPage)
		if err != nil {
			return res, err
		}
		for _, w := range waiters {
			after = w.WorkflowID
			res.Checked++
			terminal, err := e.reconcileWaiter(ctx, w.WorkflowID, w.StepIndex, 0, "")
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				errs = append(errs, err)
				continue
			}
			if settled, err := e.stillWaiting(ctx, w.WorkflowID); err == nil && !settled {
				res.Settled++
			}
			e.afterTerminal(ctx, terminal...)
		}
		if len(waiters) < sweepPage {
			break
		}
	}
	for after := int64(0); ; {
		children, err := e.store.StuckRunWorkflowChildren(ctx, after, sweepPage)
		if err != nil {
			return res, err
		}
		for _, id := range children {
			after = id
			res.Settled++
			e.afterTerminal(ctx, id)
		}
		if len(children) < sweepPage {
			break
		}
	}
	return res, errors.Join(errs...)
}

func (e *Engine) stillWaiting(ctx context.Context, id int64) (bool, error) {
	st, err := e.store.WorkflowStatus(ctx, id)
	return st == string(workflow.StatusWaitingForWorkflows), err
}

// PollSignals re-evaluates the workflows parked in waiting_for_signal that
// received a signal row with an id above after (rows another process
// inserted without settling the wait), and returns the new watermark: the
// highest signal id seen. Start with 0 to check every stored signal once.
func (e *Engine) PollSignals(ctx context.Context, after int64) (mark int64, settled int, err error) {
	upto, err := e.store.MaxSignalID(ctx)
	if err != nil || upto <= after {
		return after, 0, err
	}
	ids, err := e.store.SignalWaiters(ctx, after, upto)
	if err != nil {
		return after, 0, err
	}
	var errs []error
	for _, id := range ids {
		ok, err := e.ResumeSignalWait(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return after, settled, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		if ok {
			settled++
		}
	}
	if len(errs) > 0 {
		// Keep the watermark so the failed ones are tried again.
		return after, settled, errors.Join(errs...)
	}
	return upto, settled, nil
}
