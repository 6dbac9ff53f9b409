package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrBatchAborted wraps the reason a WorkflowTxBatch rolled back as a
// whole before its COMMIT: nothing of it was written, and each body can be
// run again on its own.
var ErrBatchAborted = errors.New("workflow batch rolled back")

// WorkflowTxBatch runs several workflow transaction bodies in one database
// transaction (group commit): a step's own statements are few and cheap,
// its START, COMMIT and the log and event INSERTs are most of its round
// trips and of the server's work, and those are paid once per batch here.
//
// Each body runs inside its own SAVEPOINT, so a body that returns an error
// is undone alone (ROLLBACK TO SAVEPOINT, its buffered log and event rows
// dropped) and errs[i] is that error, while the others commit. The row
// locks a rolled-back body took stay held until the batch ends (InnoDB
// keeps them), which only delays, never changes, what others see.
//
// err is nil when the batch committed. Otherwise, when errors.Is(err,
// ErrBatchAborted), nothing was written (a deadlock or lock wait timeout,
// which InnoDB may have applied to the whole transaction, a broken
// savepoint, a failed flush) and every body must be run again on its own;
// any other err is a failed COMMIT, whose outcome is unknown, as for a
// single transaction. Bodies are not retried here: the caller retries each
// through WorkflowTx, concurrently, with its own context.
func (s *Store) WorkflowTxBatch(ctx context.Context, fns []func(*WorkflowTx) error) (errs []error, err error) {
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
	all := &WorkflowTx{s: s, tx: tx, ctx: ctx}
	errs = make([]error, len(fns))
	for i, fn := range fns {
		sp := fmt.Sprintf("queuety_b%d", i)
		if _, err := tx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
			return nil, fmt.Errorf("%w: savepoint: %w", ErrBatchAborted, err)
		}
		w := &WorkflowTx{s: s, tx: tx, ctx: ctx}
		ferr := fn(w)
		if ferr == nil {
			all.logs = append(all.logs, w.logs...)
			all.events = append(all.events, w.events...)
			continue
		}
		if Transient(ferr) || ConnectionLost(ferr) {
			// A deadlock may have rolled back the whole transaction, the
			// others' bodies included; a lost connection certainly did.
			return nil, fmt.Errorf("%w: %w", ErrBatchAborted, ferr)
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+sp); err != nil {
			return nil, fmt.Errorf("%w: rollback to savepoint: %w (after %w)", ErrBatchAborted, err, ferr)
		}
		errs[i] = ferr
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
