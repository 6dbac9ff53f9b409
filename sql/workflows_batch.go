package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// ErrBatchAborted wraps the reason a WorkflowTxBatch rolled back as a
// whole before its COMMIT: nothing of it was written, and each body can be
// run again on its own.
var ErrBatchAborted = errors.New("workflow batch rolled back")

// BatchBody is one body of a WorkflowTxBatch, with the workflow and job it
// locks first (0: none), which the batch locks up front for all bodies.
type BatchBody struct {
	WorkflowID, JobID int64
	Fn                func(*WorkflowTx) error
}

// WorkflowTxBatch runs several workflow transaction bodies in one database
// transaction (group commit): a step's own statements are few and cheap,
// its START, COMMIT and its reads and writes of single rows are most of
// its round trips and of the server's work, and those are paid once per
// batch here: the bodies' workflows and jobs are locked with one SELECT
// each, and their common writes are deferred and sent together
// (workflows_deferred.go).
//
// A body that returns an error is undone alone: its deferred writes and
// buffered log and event rows are dropped, and what it sent is rolled back
// to the SAVEPOINT it took before its first real statement; errs[i] is
// that error, while the others commit. The row locks a rolled-back body
// took stay held until the batch ends (InnoDB keeps them), which only
// delays, never changes, what others see.
//
// err is nil when the batch committed. Otherwise, when errors.Is(err,
// ErrBatchAborted), nothing was written (a deadlock or lock wait timeout,
// which InnoDB may have applied to the whole transaction, a broken
// savepoint, a failed flush) and every body must be run again on its own;
// any other err is a failed COMMIT, whose outcome is unknown, as for a
// single transaction. Bodies are not retried here: the caller retries each
// through WorkflowTx, concurrently, with its own context.
func (s *Store) WorkflowTxBatch(ctx context.Context, bodies []BatchBody) (errs []error, err error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: begin: %w", ErrBatchAborted, err)
	}
	// Rolled back on every way out before the COMMIT, a body's panic
	// included (the connection must not stay in a transaction).
	committing := false
	defer func() {
		if !committing {
			_ = tx.Rollback()
		}
	}()
	workflowIDs, jobIDs := batchIDs(bodies)
	batch, err := s.lockBatch(ctx, tx, workflowIDs, jobIDs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatchAborted, err)
	}
	utx := tx.Unsafe()
	// A step writes about two log and two event rows: sized for that, the
	// batch's lists are not regrown body by body.
	all := &WorkflowTx{s: s, tx: tx, utx: utx, ctx: ctx, batch: batch,
		logs: make([]LogRow, 0, 2*len(bodies)), events: make([]WorkflowEvent, 0, 2*len(bodies))}
	errs = make([]error, len(bodies))
	for i, body := range bodies {
		w := &WorkflowTx{s: s, tx: tx, utx: utx, ctx: ctx, batch: batch, savepoint: "queuety_b" + strconv.Itoa(i)}
		ferr := body.Fn(w)
		if ferr == nil {
			if !w.deferred.empty() {
				batch.pending = append(batch.pending, w)
			}
			all.logs = append(all.logs, w.logs...)
			all.events = append(all.events, w.events...)
			continue
		}
		if errors.Is(ferr, ErrBatchAborted) || Transient(ferr) || ConnectionLost(ferr) {
			// A deadlock may have rolled back the whole transaction, the
			// others' bodies included; a lost connection certainly did;
			// another body's writes failed to send.
			return nil, fmt.Errorf("%w: %w", ErrBatchAborted, ferr)
		}
		if w.inSavepoint {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+w.savepoint); err != nil {
				return nil, fmt.Errorf("%w: rollback to savepoint: %w (after %w)", ErrBatchAborted, err, ferr)
			}
		}
		errs[i] = ferr
	}
	if err := all.flushPending(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatchAborted, err)
	}
	if err := all.flush(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatchAborted, err)
	}
	committing = true
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return errs, nil
}
