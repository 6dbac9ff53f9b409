package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// LockForEachPlan reads and locks the cursor of the paged for_each plan of
// placeholder job jobID: the first item index without a branch job, and
// whether a plan is under way at all.
func (w *WorkflowTx) LockForEachPlan(jobID int64) (next int64, found bool, err error) {
	if err := w.real(); err != nil {
		return 0, false, err
	}
	err = w.tx.GetContext(w.ctx, &next, w.s.query(qLockForEachPlan), jobID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("lock for_each plan of job %d: %w", jobID, err)
	}
	return next, true, nil
}

// SaveForEachPlan records that the items before next of placeholder
// jobID's plan have their branch jobs.
func (w *WorkflowTx) SaveForEachPlan(jobID, workflowID int64, step int, next, total int64) error {
	_, err := w.exec(qSaveForEachPlan, jobID, workflowID, step, next, total, DateTime(w.s.clock.Now()))
	return err
}

// DeleteForEachPlan drops the cursor of placeholder jobID's plan: the
// plan is over (its last page inserted, or the workflow moved on).
func (w *WorkflowTx) DeleteForEachPlan(jobID int64) error {
	_, err := w.exec(qDeleteForEachPlan, jobID)
	return err
}

// RenewForEachLease refreshes reserved_at of placeholder jobID, whose row
// the caller locked and found still held by its attempt: a page of a long
// plan renews the lease it plans under.
func (w *WorkflowTx) RenewForEachLease(jobID int64) error {
	_, err := w.exec(qRenewForEachLease, jobID)
	return err
}

// DeleteForEachPlansOf drops the cursors of workflowID's plans: the
// workflow failed or was cancelled, and its placeholders were buried.
func (w *WorkflowTx) DeleteForEachPlansOf(workflowID int64) error {
	_, err := w.exec(qDeleteForEachPlansOf, workflowID)
	return err
}

// DeleteOrphanForEachPlans drops the cursors no plan will read again
// (their workflow gone, ended or past the step, their placeholder gone or
// completed) and returns how many.
func (s *Store) DeleteOrphanForEachPlans(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.query(qDeleteOrphanForEachPlans))
	if err != nil {
		return 0, fmt.Errorf("delete orphan for_each plans: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// LockWorkflowPosition locks a workflow row and reads its status and
// current step, not its state (found is false when it is gone).
func (w *WorkflowTx) LockWorkflowPosition(id int64) (status string, step int, found bool, err error) {
	if err := w.real(); err != nil {
		return "", 0, false, err
	}
	var r struct {
		Status      string `db:"status"`
		CurrentStep int    `db:"current_step"`
	}
	err = w.tx.GetContext(w.ctx, &r, w.s.query(qLockWorkflowPosition), id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("lock workflow %d: %w", id, err)
	}
	return r.Status, r.CurrentStep, true, nil
}
