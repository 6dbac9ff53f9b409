package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// BatchRow is one row of the batches table, as BatchManager reads it.
type BatchRow struct {
	ID           int64          `db:"id"`
	Name         sql.NullString `db:"name"`
	TotalJobs    int64          `db:"total_jobs"`
	PendingJobs  int64          `db:"pending_jobs"`
	FailedJobs   int64          `db:"failed_jobs"`
	FailedJobIDs string         `db:"failed_job_ids"`
	Options      string         `db:"options"`
	CancelledAt  sql.NullTime   `db:"cancelled_at"`
	CreatedAt    time.Time      `db:"created_at"`
	FinishedAt   sql.NullTime   `db:"finished_at"`
}

// BatchCallbacks says which of a batch's callbacks a transition fires,
// after its commit and in this order: catch, then, finally.
type BatchCallbacks struct {
	BatchID              int64
	Catch, Then, Finally bool
}

// Any reports whether some callback fires.
func (c BatchCallbacks) Any() bool { return c.Catch || c.Then || c.Finally }

// GetBatch reads one batch (BatchManager::find); ErrBatchNotFound when it
// is gone.
func (s *Store) GetBatch(ctx context.Context, id int64) (BatchRow, error) {
	var b BatchRow
	err := s.db.GetContext(ctx, &b, s.query(qGetBatch), id)
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrBatchNotFound
	}
	return b, err
}

// ErrBatchNotFound is returned by GetBatch for a missing batch.
var ErrBatchNotFound = errors.New("batch not found")

// CompleteBatchJob is CompleteJobs for one job of a batch: the job's
// completion, its log row and BatchManager::record_completion's counters
// in one transaction, so a crash never leaves a completed job uncounted
// or a count without its job. applied is false when the attempt no longer
// holds the row (nothing changed); already when it had completed it (a
// retried write).
func (s *Store) CompleteBatchJob(ctx context.Context, c Completion, batchID int64) (applied, already bool, cb BatchCallbacks, err error) {
	err = s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		applied, already, cb = false, false, BatchCallbacks{}
		held, err := s.lockAttempts(ctx, tx, []int64{c.ID})
		if err != nil {
			return err
		}
		row, ok := held[c.ID]
		switch {
		case ok && row.heldBy(c.Attempt) && row.Status == StatusCompleted:
			already = true
			return nil
		case !ok || !row.heldBy(c.Attempt) || row.Status != StatusProcessing:
			return nil
		}
		q, args, err := s.in(qCompleteJobs, []int64{c.ID})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if err := s.insertLogs(ctx, tx, []LogRow{c.Log}); err != nil {
			return err
		}
		applied = true
		cb, err = s.recordBatchCompletion(ctx, tx, batchID)
		return err
	})
	return applied, already, cb, err
}

// FailBatchJob is FailJob for one job of a batch: a burial also records
// the failure in the batch (BatchManager::record_failure) in the same
// transaction; a retried failure touches nothing of the batch.
func (s *Store) FailBatchJob(ctx context.Context, f Failure, batchID int64) (applied bool, cb BatchCallbacks, err error) {
	err = s.inFencedTx(ctx, func(tx *sqlx.Tx) error {
		cb = BatchCallbacks{}
		var err error
		applied, err = s.failIn(ctx, tx, f)
		if err != nil || !applied || !f.Bury {
			return err
		}
		cb, err = s.recordBatchFailure(ctx, tx, batchID, f.ID)
		return err
	})
	return applied, cb, err
}

// RecordBatchFailure is BatchManager::record_failure on its own (a job
// buried outside the worker's failure path).
func (s *Store) RecordBatchFailure(ctx context.Context, batchID, jobID int64) (cb BatchCallbacks, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		cb, err = s.recordBatchFailure(ctx, tx, batchID, jobID)
		return err
	})
	return cb, err
}

// lockBatchRow reads the batch FOR UPDATE; ok is false when it is missing or
// already finished (a cancelled batch is finished): then nothing is
// counted, as in BatchManager.
func (s *Store) lockBatchRow(ctx context.Context, tx *sqlx.Tx, id int64) (BatchRow, bool, error) {
	var b BatchRow
	err := tx.GetContext(ctx, &b, s.query(qLockBatch), id)
	if errors.Is(err, sql.ErrNoRows) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("lock batch %d: %w", id, err)
	}
	return b, !b.FinishedAt.Valid, nil
}

func (s *Store) recordBatchCompletion(ctx context.Context, tx *sqlx.Tx, id int64) (BatchCallbacks, error) {
	cb := BatchCallbacks{BatchID: id}
	b, ok, err := s.lockBatchRow(ctx, tx, id)
	if err != nil || !ok {
		return cb, err
	}
	pending := max(b.PendingJobs-1, 0)
	q := qBatchCompletion
	if pending == 0 {
		q = qBatchCompletionFinished
		cb.Then = b.FailedJobs == 0 || allowFailures(b.Options)
		cb.Finally = true
	}
	if _, err := tx.ExecContext(ctx, s.query(q), pending, id); err != nil {
		return cb, fmt.Errorf("batch %d completion: %w", id, err)
	}
	return cb, nil
}

func (s *Store) recordBatchFailure(ctx context.Context, tx *sqlx.Tx, id, jobID int64) (BatchCallbacks, error) {
	cb := BatchCallbacks{BatchID: id}
	b, ok, err := s.lockBatchRow(ctx, tx, id)
	if err != nil || !ok {
		return cb, err
	}
	ids := decodeIDList(b.FailedJobIDs)
	for _, v := range ids {
		if n, ok := v.AsInt64(); ok && v.IsInt() && n == jobID {
			return cb, nil // counted already (in_array strict)
		}
	}
	enc, err := phpjson.Encode(phpjson.List(append(ids, phpjson.Int(jobID))...))
	if err != nil {
		return cb, fmt.Errorf("batch %d failed_job_ids: %w", id, err)
	}
	pending := max(b.PendingJobs-1, 0)
	q := qBatchFailure
	if pending == 0 {
		q = qBatchFailureFinished
		cb.Then = allowFailures(b.Options)
		cb.Finally = true
	}
	cb.Catch = b.FailedJobs == 0
	if _, err := tx.ExecContext(ctx, s.query(q), pending, b.FailedJobs+1, string(enc), id); err != nil {
		return cb, fmt.Errorf("batch %d failure: %w", id, err)
	}
	return cb, nil
}

// decodeIDList is BatchManager::decode_json_column for failed_job_ids:
// anything but a JSON array reads as empty.
func decodeIDList(raw string) []phpjson.Value {
	v, err := phpjson.DecodeString(raw)
	if err != nil {
		return nil
	}
	if l, ok := v.AsList(); ok {
		return l
	}
	if o, ok := v.AsObject(); ok {
		var out []phpjson.Value
		for _, e := range o.All() {
			out = append(out, e)
		}
		return out
	}
	return nil
}

// allowFailures is !empty($options['allow_failures']).
func allowFailures(options string) bool {
	v, err := phpjson.DecodeString(options)
	if err != nil {
		return false
	}
	o, ok := v.AsObject()
	if !ok {
		return false
	}
	af, ok := o.Get("allow_failures")
	return ok && phpTruthy(af)
}

// phpTruthy is PHP's boolean conversion of a decoded JSON value.
func phpTruthy(v phpjson.Value) bool {
	switch v.Kind() {
	case phpjson.KindNull:
		return false
	case phpjson.KindBool:
		b, _ := v.AsBool()
		return b
	case phpjson.KindString:
		s, _ := v.AsString()
		return s != "" && s != "0"
	case phpjson.KindNumber:
		f, _ := v.AsFloat64()
		return f != 0
	default:
		return !v.IsEmptyArray()
	}
}

// CancelBatch is BatchManager::cancel's write; cancelled is false when the
// batch is missing or was cancelled already.
func (s *Store) CancelBatch(ctx context.Context, id int64) (cancelled bool, err error) {
	res, err := s.db.ExecContext(ctx, s.query(qCancelBatch), id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// InsertBatch is BatchBuilder::dispatch's writes: the batch row (name
// NULL when empty, options as the caller encoded them), then each job
// with its batch_id, in one transaction so a batch never counts jobs that
// were not written.
func (s *Store) InsertBatch(ctx context.Context, name string, options []byte, jobs []InsertJob) (batchID int64, jobIDs []int64, err error) {
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		jobIDs = make([]int64, 0, len(jobs))
		n := sql.NullString{String: name, Valid: name != ""}
		res, err := tx.ExecContext(ctx, s.query(qInsertBatch), n, len(jobs), len(jobs), string(options))
		if err != nil {
			return fmt.Errorf("insert batch: %w", err)
		}
		if batchID, err = res.LastInsertId(); err != nil {
			return err
		}
		for _, j := range jobs {
			j.BatchID = Int(batchID)
			id, err := s.insertJob(ctx, tx, j, sql.NullString{})
			if err != nil {
				return err
			}
			jobIDs = append(jobIDs, id)
		}
		return nil
	})
	return batchID, jobIDs, err
}
