package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// MachineRow is one row of the state_machines table.
type MachineRow struct {
	ID                int64          `db:"id" json:"id"`
	Name              string         `db:"name" json:"name"`
	Status            string         `db:"status" json:"status"`
	CurrentState      string         `db:"current_state" json:"current_state"`
	State             string         `db:"state" json:"-"`
	Definition        string         `db:"definition" json:"-"`
	DefinitionHash    sql.NullString `db:"definition_hash" json:"-"`
	DefinitionVersion sql.NullString `db:"definition_version" json:"-"`
	IdempotencyKey    sql.NullString `db:"idempotency_key" json:"-"`
	StartedAt         time.Time      `db:"started_at" json:"-"`
	UpdatedAt         time.Time      `db:"updated_at" json:"-"`
	CompletedAt       sql.NullTime   `db:"completed_at" json:"-"`
	FailedAt          sql.NullTime   `db:"failed_at" json:"-"`
	ErrorMessage      sql.NullString `db:"error_message" json:"-"`
}

// MachineEvent is one state_machine_events row. JSON columns hold the
// exact bytes (json_encode'd by the caller); nil is SQL NULL.
type MachineEvent struct {
	ID             int64          `db:"id"`
	MachineID      int64          `db:"machine_id"`
	JobID          sql.NullInt64  `db:"job_id"`
	StateName      string         `db:"state_name"`
	Handler        sql.NullString `db:"handler"`
	Event          string         `db:"event"`
	EventName      sql.NullString `db:"event_name"`
	TransitionName sql.NullString `db:"transition_name"`
	Queue          sql.NullString `db:"queue"`
	Attempt        sql.NullInt64  `db:"attempt"`
	Input          sql.NullString `db:"input"`
	Output         sql.NullString `db:"output"`
	StateBefore    sql.NullString `db:"state_before"`
	StateAfter     sql.NullString `db:"state_after"`
	Context        sql.NullString `db:"context"`
	Artifacts      sql.NullString `db:"artifacts"`
	Chunks         sql.NullString `db:"chunks"`
	Error          sql.NullString `db:"error"`
	DurationMS     sql.NullInt64  `db:"duration_ms"`
	CreatedAt      time.Time      `db:"created_at"`
}

// ErrMachineNotFound is returned for a missing state machine.
var ErrMachineNotFound = errors.New("state machine not found")

// MachineUpdate is update_machine_row's columns. Nil times are NULL.
type MachineUpdate struct {
	Status, CurrentState, State string
	CompletedAt, FailedAt       *time.Time
	ErrorMessage                sql.NullString
}

// MachineActionJob is what enqueue_state_action dispatches.
type MachineActionJob struct {
	Queue            string
	Payload          []byte
	Priority         int
	MaxAttempts      int
	ConcurrencyGroup sql.NullString
	ConcurrencyLimit sql.NullInt64
	CostUnits        int64
}

// MachineTx is a transaction holding one machine's row lock
// (StateMachine::lock_machine). Not retried on deadlock: the caller may
// have run user code under it.
type MachineTx struct {
	s  *Store
	tx *sqlx.Tx
}

// LockMachine begins a transaction and locks the machine's row.
func (s *Store) LockMachine(ctx context.Context, id int64) (*MachineTx, MachineRow, error) {
	var m MachineRow
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, m, err
	}
	if err := tx.GetContext(ctx, &m, s.query(qLockMachine), id); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, sql.ErrNoRows) {
			return nil, m, ErrMachineNotFound
		}
		return nil, m, fmt.Errorf("lock machine %d: %w", id, err)
	}
	return &MachineTx{s: s, tx: tx}, m, nil
}

// Commit ends the transaction.
func (t *MachineTx) Commit() error { return t.tx.Commit() }

// Rollback undoes it (the lock goes, so do the rows written under it).
func (t *MachineTx) Rollback() error { return t.tx.Rollback() }

// Update writes the machine's row.
func (t *MachineTx) Update(ctx context.Context, id int64, u MachineUpdate) error {
	_, err := t.tx.ExecContext(ctx, t.s.query(qUpdateMachine), u.Status, u.CurrentState, u.State,
		nullDateTime(u.CompletedAt), nullDateTime(u.FailedAt), u.ErrorMessage, id)
	if err != nil {
		return fmt.Errorf("update machine %d: %w", id, err)
	}
	return nil
}

// Fail writes fail_action's columns.
func (t *MachineTx) Fail(ctx context.Context, id int64, currentState, state string, at time.Time, message string) error {
	_, err := t.tx.ExecContext(ctx, t.s.query(qFailMachine), currentState, state, DateTime(at), FitText(message), id)
	if err != nil {
		return fmt.Errorf("fail machine %d: %w", id, err)
	}
	return nil
}

// Event inserts an event row under the lock.
func (t *MachineTx) Event(ctx context.Context, e MachineEvent) error {
	return t.s.insertMachineEvent(ctx, t.tx, e)
}

// EnqueueAction dispatches an action job and returns its id.
func (t *MachineTx) EnqueueAction(ctx context.Context, j MachineActionJob) (int64, error) {
	res, err := t.tx.ExecContext(ctx, t.s.query(qInsertMachineActionJob), j.Queue, string(j.Payload), j.Priority,
		j.MaxAttempts, DateTime(t.s.clock.Now()), j.ConcurrencyGroup, j.ConcurrencyLimit, j.CostUnits)
	if err != nil {
		return 0, fmt.Errorf("enqueue machine action: %w", err)
	}
	return res.LastInsertId()
}

// InsertMachineEvent writes an event row on its own (autocommit), as the
// plugin's event log does once the machine's transaction is rolled back.
func (s *Store) InsertMachineEvent(ctx context.Context, e MachineEvent) error {
	return s.insertMachineEvent(ctx, s.db, e)
}

func (s *Store) insertMachineEvent(ctx context.Context, ex sqlx.ExecerContext, e MachineEvent) error {
	_, err := ex.ExecContext(ctx, s.query(qInsertMachineEvent), e.MachineID, e.JobID, e.StateName, e.Handler,
		e.Event, e.EventName, e.TransitionName, e.Queue, e.Attempt, e.Input, e.Output, e.StateBefore,
		e.StateAfter, e.Context, e.Artifacts, e.Chunks, e.Error, e.DurationMS)
	if err != nil {
		return fmt.Errorf("insert machine event %s: %w", e.Event, err)
	}
	return nil
}

// GetMachine reads one machine.
func (s *Store) GetMachine(ctx context.Context, id int64) (MachineRow, error) {
	var m MachineRow
	err := s.db.GetContext(ctx, &m, s.query(qGetMachine), id)
	if errors.Is(err, sql.ErrNoRows) {
		return m, ErrMachineNotFound
	}
	return m, err
}

// ListMachines lists machines newest first; status "" lists all.
func (s *Store) ListMachines(ctx context.Context, status string, limit int) ([]MachineRow, error) {
	var out []MachineRow
	err := s.db.SelectContext(ctx, &out, s.query(qListMachines), status, status, max(1, limit))
	return out, err
}

// MachineEvents is a machine's timeline, oldest first.
func (s *Store) MachineEvents(ctx context.Context, id int64, limit int) ([]MachineEvent, error) {
	var out []MachineEvent
	err := s.db.SelectContext(ctx, &out, s.query(qMachineEvents), id, max(1, limit))
	return out, err
}

func nullDateTime(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return String(DateTime(*t))
}

// Savepoint marks a point RollbackToSavepoint undoes the rows back to,
// the lock kept.
func (t *MachineTx) Savepoint(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, t.s.query(qMachineSavepoint))
	return err
}

// RollbackToSavepoint undoes what was written since Savepoint.
func (t *MachineTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, t.s.query(qMachineRollbackSavepoint))
	return err
}

// NewMachine is what dispatch_definition inserts.
type NewMachine struct {
	Name, Status, CurrentState, State, Definition     string
	DefinitionHash, DefinitionVersion, IdempotencyKey sql.NullString
	CompletedAt, FailedAt                             *time.Time
}

// BeginMachine starts a transaction for a new machine (no row to lock yet).
func (s *Store) BeginMachine(ctx context.Context) (*MachineTx, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &MachineTx{s: s, tx: tx}, nil
}

// Insert writes a new machine's row and returns its id.
func (t *MachineTx) Insert(ctx context.Context, m NewMachine) (int64, error) {
	res, err := t.tx.ExecContext(ctx, t.s.query(qInsertMachine), m.Name, m.Status, m.CurrentState, m.State,
		m.Definition, m.DefinitionHash, m.DefinitionVersion, m.IdempotencyKey, nullDateTime(m.CompletedAt), nullDateTime(m.FailedAt))
	if err != nil {
		return 0, fmt.Errorf("insert machine: %w", err)
	}
	return res.LastInsertId()
}

// FindByKey returns the machine holding an idempotency key (0: none).
func (t *MachineTx) FindByKey(ctx context.Context, key string) (int64, error) {
	var id int64
	err := t.tx.GetContext(ctx, &id, t.s.query(qFindMachineByKey), key)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// FindMachineByKey is FindByKey outside a transaction.
func (s *Store) FindMachineByKey(ctx context.Context, key string) (int64, error) {
	var id int64
	err := s.db.GetContext(ctx, &id, s.query(qFindMachineByKey), key)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}
