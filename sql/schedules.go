package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Schedule errors.
var (
	ErrScheduleNotFound = errors.New("schedule not found")
	ErrScheduleExists   = errors.New("a schedule for this handler exists")
)

// ScheduleRow is one row of the schedules table.
type ScheduleRow struct {
	ID             int64        `db:"id"`
	Handler        string       `db:"handler"`
	Payload        string       `db:"payload"`
	Queue          string       `db:"queue"`
	Expression     string       `db:"expression"`
	ExpressionType string       `db:"expression_type"`
	LastRun        sql.NullTime `db:"last_run"`
	NextRun        time.Time    `db:"next_run"`
	OverlapPolicy  string       `db:"overlap_policy"`
	Enabled        bool         `db:"enabled"`
	CreatedAt      time.Time    `db:"created_at"`
}

// NewSchedule are the columns Scheduler::add writes. Payload is the exact
// JSON bytes (internal/phpjson).
type NewSchedule struct {
	Handler        string
	Payload        []byte
	Queue          string
	Expression     string
	ExpressionType string
	OverlapPolicy  string
	NextRun        time.Time
}

// ListSchedules returns every schedule in id order, as Scheduler::list.
func (s *Store) ListSchedules(ctx context.Context) ([]ScheduleRow, error) {
	var rows []ScheduleRow
	if err := s.db.SelectContext(ctx, &rows, s.query(qSchedulesList)); err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return rows, nil
}

// FindSchedule returns the schedule of handler (handler is unique), or
// ErrScheduleNotFound.
func (s *Store) FindSchedule(ctx context.Context, handler string) (*ScheduleRow, error) {
	var r ScheduleRow
	err := s.db.GetContext(ctx, &r, s.query(qSchedulesFind), handler)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: handler %q", ErrScheduleNotFound, handler)
	}
	if err != nil {
		return nil, fmt.Errorf("find schedule: %w", err)
	}
	return &r, nil
}

// AddSchedule inserts a schedule and returns its id; ErrScheduleExists
// when the handler has one (the table's unique index).
func (s *Store) AddSchedule(ctx context.Context, n NewSchedule) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.query(qSchedulesAdd), n.Handler, string(n.Payload), n.Queue,
		n.Expression, n.ExpressionType, DateTime(n.NextRun), n.OverlapPolicy)
	if isDuplicateKey(err) {
		return 0, fmt.Errorf("%w: handler %q", ErrScheduleExists, n.Handler)
	}
	if err != nil {
		return 0, fmt.Errorf("add schedule: %w", err)
	}
	return res.LastInsertId()
}

// RemoveSchedule deletes the schedule of handler and says whether there
// was one.
func (s *Store) RemoveSchedule(ctx context.Context, handler string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.query(qSchedulesRemove), handler)
	if err != nil {
		return false, fmt.Errorf("remove schedule: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DueScheduleIDs returns up to limit ids above afterID of enabled rows
// whose next_run is at or before now. The rows are not locked: TickSchedule
// checks each again.
func (s *Store) DueScheduleIDs(ctx context.Context, now time.Time, afterID int64, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.query(qSchedulesDue), DateTime(now), afterID, limit); err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	return ids, nil
}

// ScheduleAction is what a tick does with a due row.
type ScheduleAction int

// The actions of a tick.
const (
	ScheduleDispatch ScheduleAction = iota // insert the job; last_run, next_run move on
	ScheduleSkip                           // no job; last_run, next_run move on
	ScheduleWait                           // nothing written: the row stays due
)

// ScheduleDecision is the action for one row, with the job to insert
// (ScheduleDispatch) and the new next_run (ScheduleDispatch, ScheduleSkip).
type ScheduleDecision struct {
	Action  ScheduleAction
	Job     InsertJob
	NextRun time.Time
}

// ScheduleTick is what TickSchedule did.
type ScheduleTick struct {
	Row    *ScheduleRow // nil: no longer due, or held by another tick
	Action ScheduleAction
	JobID  int64 // ScheduleDispatch: the job inserted
}

// TickSchedule runs one due row in one transaction: it locks the row if it
// is still due and no other tick holds it (else Row is nil and nothing is
// written), counts the handler's pending and processing jobs when the row's
// overlap policy is not allow, asks decide, and writes the decision:
// last_run = now and the new next_run (only if next_run is still what the
// locking read saw), and the job, committed together. decide may be called
// again if the transaction is retried after a deadlock.
func (s *Store) TickSchedule(ctx context.Context, id int64, now time.Time,
	decide func(row *ScheduleRow, active int) (ScheduleDecision, error)) (ScheduleTick, error) {
	var out ScheduleTick
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		out = ScheduleTick{}
		var row ScheduleRow
		err := tx.GetContext(ctx, &row, s.query(qSchedulesLockDue), id, DateTime(now))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock schedule %d: %w", id, err)
		}
		active := 0
		if row.OverlapPolicy != "allow" {
			if err := tx.GetContext(ctx, &active, s.query(qSchedulesActiveJobs), row.Handler); err != nil {
				return fmt.Errorf("schedule %d overlap check: %w", id, err)
			}
		}
		d, err := decide(&row, active)
		if err != nil {
			return err
		}
		out.Row, out.Action = &row, d.Action
		if d.Action == ScheduleWait {
			return nil
		}
		res, err := tx.ExecContext(ctx, s.query(qSchedulesRan), DateTime(now), DateTime(d.NextRun), row.ID, DateTime(row.NextRun))
		if err != nil {
			return fmt.Errorf("update schedule %d: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			// Cannot happen while the row lock is held; if it does, the
			// run belongs to whoever changed the row.
			out.Row = nil
			return err
		}
		if d.Action == ScheduleDispatch {
			if out.JobID, err = s.insertJob(ctx, tx, d.Job, sql.NullString{}); err != nil {
				return fmt.Errorf("schedule %d: %w", id, err)
			}
		}
		return nil
	})
	return out, err
}
