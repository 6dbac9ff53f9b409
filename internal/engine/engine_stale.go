package engine

import (
	"context"
	"errors"
	"time"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// StaleDecide is the caller's retry policy for a stale step job: bury when
// its attempts are used up, else retry after delay.
type StaleDecide func(job *store.JobRow) (bury bool, delay time.Duration)

// RecoverStaleSteps is Worker::recover_stale for workflow step jobs:
// processing steps not heard from since cutoff are retried (logged
// `retried`) or, per decide, buried with "Stale: worker died without
// completing." (logged `buried`); then, after the commit, each buried
// step fails its workflow (Workflow::fail), except a for_each branch,
// which goes to the branch terminal-failure path (the branch is recorded
// as failed; the workflow fails only when the step can no longer
// complete). Like the engine's own failure path, only real branches
// (payload with __for_each) count as branches, not the placeholder.
func (e *Engine) RecoverStaleSteps(ctx context.Context, cutoff time.Time, limit int, decide StaleDecide) (retried, buried int, err error) {
	// Cursors of for_each plans whose workflow ended without this engine
	// (PHP failed or cancelled it, retention purged it) go too: nothing
	// else removes them. A failure here does not hold up the sweep.
	_, orphanErr := e.store.DeleteOrphanForEachPlans(ctx)
	states := map[int64]*workflow.State{}
	isBranch := func(j *store.JobRow) bool {
		if item, ok := e.kinds.branchItem(j.Payload); !j.WorkflowID.Valid || !j.StepIndex.Valid || !ok || !item.Indexed {
			return false
		}
		st, ok := states[j.WorkflowID.Int64]
		if !ok {
			if row, err := e.store.GetWorkflow(ctx, j.WorkflowID.Int64); err == nil {
				st, _ = workflow.ParseState([]byte(row.State))
			}
			states[j.WorkflowID.Int64] = st
		}
		if st == nil {
			return false
		}
		s, ok := st.Step(int(j.StepIndex.Int64))
		item, isItem := e.stepItem(s, j.Payload)
		return ok && isItem && item.Indexed
	}
	branch := map[int64]bool{}
	left := map[int64][]string{}
	r, rows, err := e.store.RecoverStaleWorkflowSteps(ctx, cutoff, limit, func(j *store.JobRow) store.StaleStepDecision {
		bury, delay := decide(j)
		if !bury {
			return store.StaleStepDecision{Delay: delay}
		}
		if classes := e.phpOnlyFor(ctx, j.WorkflowID.Int64, "failure"); len(classes) > 0 {
			// Burying it fails the workflow into PHP compensations this
			// process cannot run: PHP workers' recover_stale does it all.
			left[j.WorkflowID.Int64] = classes
			return store.StaleStepDecision{Leave: true}
		}
		b := isBranch(j)
		branch[j.ID] = b
		return store.StaleStepDecision{Bury: true, KeepRow: b}
	})
	if err != nil {
		return 0, 0, errors.Join(err, orphanErr)
	}
	errs := []error{orphanErr}
	for id, classes := range left {
		errs = append(errs, e.noteLeftToPHP(ctx, id, "stale", classes))
	}
	for i := range rows {
		j := &rows[i]
		if branch[j.ID] {
			_, err = e.branchFailed(ctx, j.WorkflowID.Int64, j.ID, store.StaleMessage)
		} else {
			err = e.Fail(ctx, j.WorkflowID.Int64, j.ID, store.StaleMessage)
		}
		errs = append(errs, err)
	}
	return r, len(rows), errors.Join(errs...)
}
