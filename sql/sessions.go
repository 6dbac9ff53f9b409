package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Storage of worker registrations and worker-session leases
// (queries_sessions.sql). The methods take the querier to run on, so the
// session admission can run inside any transaction, the worker's claim
// transaction included; package internal/sessions holds the rules.

// ErrSessionExists is returned by InsertSession when another transaction
// created the same (namespace, session_id) first: lock the row again and
// decide on what it holds.
var ErrSessionExists = errors.New("worker session row already exists")

// StringList is a list of strings stored as a PHP-encoded JSON array
// (workers.queues, workers.capabilities, worker_sessions.requirements).
type StringList []string

// Value encodes the list with phpjson; nil is stored as [].
func (l StringList) Value() (driver.Value, error) {
	vs := make([]phpjson.Value, len(l))
	for i, s := range l {
		vs[i] = phpjson.String(s)
	}
	b, err := phpjson.Encode(phpjson.List(vs...))
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Scan decodes a stored list. A PHP array written with keys (an object) is
// read by its values, as PHP's array_values would.
func (l *StringList) Scan(src any) error {
	var s string
	switch t := src.(type) {
	case nil:
		*l = nil
		return nil
	case []byte:
		s = string(t)
	case string:
		s = t
	default:
		return fmt.Errorf("string list: cannot scan %T", src)
	}
	v, err := phpjson.DecodeString(s)
	if err != nil {
		return fmt.Errorf("string list %q: %w", s, err)
	}
	var items []phpjson.Value
	if list, ok := v.AsList(); ok {
		items = list
	} else if obj, ok := v.AsObject(); ok {
		for _, e := range obj.All() {
			items = append(items, e)
		}
	} else if !v.IsNull() {
		return fmt.Errorf("string list %q: not a JSON array", s)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		str, ok := it.AsString()
		if !ok {
			return fmt.Errorf("string list %q: entry %s is not a string", s, it.Literal())
		}
		out = append(out, str)
	}
	*l = out
	return nil
}

// WorkerRow is one worker registration.
type WorkerRow struct {
	Namespace                   string         `db:"namespace"`
	WorkerID                    string         `db:"worker_id"`
	TaskQueue                   string         `db:"task_queue"`
	Queues                      StringList     `db:"queues"`
	Runtime                     string         `db:"runtime"`
	SDKVersion                  sql.NullString `db:"sdk_version"`
	BuildID                     sql.NullString `db:"build_id"`
	Capabilities                StringList     `db:"capabilities"`
	MaxConcurrentWorkerSessions sql.NullInt64  `db:"max_concurrent_worker_sessions"`
	Status                      string         `db:"status"`
	HeartbeatIntervalSeconds    int            `db:"heartbeat_interval_seconds"`
	TaskSlots                   sql.NullString `db:"task_slots"`
	ProcessMetrics              sql.NullString `db:"process_metrics"`
	LastHeartbeatAt             sql.NullTime   `db:"last_heartbeat_at"`
	RegisteredAt                time.Time      `db:"registered_at"`
	UpdatedAt                   time.Time      `db:"updated_at"`
}

// SessionRow is one worker-session lease.
type SessionRow struct {
	ID                         int64          `db:"id"`
	Namespace                  string         `db:"namespace"`
	SessionID                  string         `db:"session_id"`
	Connection                 sql.NullString `db:"connection"`
	Queue                      sql.NullString `db:"queue"`
	Requirements               StringList     `db:"requirements"`
	Status                     string         `db:"status"`
	LeaseOwner                 sql.NullString `db:"lease_owner"`
	LeaseExpiresAt             sql.NullTime   `db:"lease_expires_at"`
	TTLExpiresAt               sql.NullTime   `db:"ttl_expires_at"`
	ClosedAt                   sql.NullTime   `db:"closed_at"`
	FailureReason              sql.NullString `db:"failure_reason"`
	LeaseSeconds               int            `db:"lease_seconds"`
	TTLSeconds                 int            `db:"ttl_seconds"`
	MaxConcurrentActivities    int            `db:"max_concurrent_activities"`
	CreateIfMissing            bool           `db:"create_if_missing"`
	AllowReacquireAfterFailure bool           `db:"allow_reacquire_after_failure"`
	LastHeartbeatAt            sql.NullTime   `db:"last_heartbeat_at"`
	CreatedAt                  time.Time      `db:"created_at"`
	UpdatedAt                  time.Time      `db:"updated_at"`
}

// Sessions are the statements on worker registrations and session leases,
// bound to where they run: the database (Store.Sessions), a session
// transaction (Store.SessionTx) or a claim (ClaimTx.Sessions, so that an
// admission commits with the claim that admitted the job). The handle they
// run on stays inside this package.
type Sessions struct {
	s *Store
	q sqlx.ExtContext
}

// Sessions runs each statement on its own, outside any transaction.
func (s *Store) Sessions() Sessions { return Sessions{s: s, q: s.db} }

// SessionTx runs fn in a READ COMMITTED transaction, retried as a whole on
// deadlocks and lock wait timeouts, so fn must not keep state across calls.
func (s *Store) SessionTx(ctx context.Context, fn func(tx Sessions) error) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error { return fn(Sessions{s: s, q: tx}) })
}

func (x Sessions) exec(ctx context.Context, name string, args ...any) (int64, error) {
	res, err := x.q.ExecContext(ctx, x.s.query(name), args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return res.RowsAffected()
}

// UpsertWorker registers a worker or replaces its registration (status
// active), keeping the first registered_at.
func (x Sessions) UpsertWorker(ctx context.Context, w WorkerRow) error {
	_, err := x.exec(ctx, qUpsertWorker, w.Namespace, w.WorkerID, w.TaskQueue, w.Queues,
		w.Runtime, w.SDKVersion, w.BuildID, w.Capabilities, w.MaxConcurrentWorkerSessions,
		w.HeartbeatIntervalSeconds, w.TaskSlots, w.ProcessMetrics, w.LastHeartbeatAt,
		w.RegisteredAt, w.UpdatedAt)
	return err
}

// GetWorker reads a registration (nil when there is none).
func (x Sessions) GetWorker(ctx context.Context, namespace, workerID string) (*WorkerRow, error) {
	var w WorkerRow
	err := sqlx.GetContext(ctx, x.q, &w, x.s.query(qGetWorker), namespace, workerID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", qGetWorker, err)
	}
	return &w, nil
}

// LockWorker reads and locks a registration (nil when there is none).
func (x Sessions) LockWorker(ctx context.Context, namespace, workerID string) (*WorkerRow, error) {
	var w WorkerRow
	err := sqlx.GetContext(ctx, x.q, &w, x.s.query(qLockWorker), namespace, workerID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", qLockWorker, err)
	}
	return &w, nil
}

// ListWorkers reads a namespace's registrations by worker id.
func (x Sessions) ListWorkers(ctx context.Context, namespace string) ([]WorkerRow, error) {
	var rows []WorkerRow
	if err := sqlx.SelectContext(ctx, x.q, &rows, x.s.query(qListWorkers), namespace); err != nil {
		return nil, fmt.Errorf("%s: %w", qListWorkers, err)
	}
	return rows, nil
}

// HeartbeatWorker records a registration heartbeat at `at`; taskSlots and
// processMetrics replace the stored ones only when valid. It reports
// nothing about a missing registration (MySQL counts unchanged rows as not
// affected): read the row back.
func (x Sessions) HeartbeatWorker(ctx context.Context, namespace, workerID string, at time.Time, taskSlots, processMetrics sql.NullString) error {
	_, err := x.exec(ctx, qHeartbeatWorker, at, at, taskSlots, processMetrics, namespace, workerID)
	return err
}

// DeleteWorker removes a registration and reports whether there was one.
func (x Sessions) DeleteWorker(ctx context.Context, namespace, workerID string) (bool, error) {
	n, err := x.exec(ctx, qDeleteWorker, namespace, workerID)
	return n > 0, err
}

// LockSession reads and locks a session row (nil when missing). Without a
// row nothing is locked under READ COMMITTED, so two creators can both get
// nil: InsertSession tells the loser with ErrSessionExists.
func (x Sessions) LockSession(ctx context.Context, namespace, sessionID string) (*SessionRow, error) {
	var r SessionRow
	err := sqlx.GetContext(ctx, x.q, &r, x.s.query(qLockWorkerSession), namespace, sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", qLockWorkerSession, err)
	}
	return &r, nil
}

// ListSessions reads a namespace's sessions, newest change first, then by
// session id.
func (x Sessions) ListSessions(ctx context.Context, namespace string) ([]SessionRow, error) {
	var rows []SessionRow
	if err := sqlx.SelectContext(ctx, x.q, &rows, x.s.query(qListWorkerSessions), namespace); err != nil {
		return nil, fmt.Errorf("%s: %w", qListWorkerSessions, err)
	}
	return rows, nil
}

// InsertSession creates a session row and sets r.ID. It returns
// ErrSessionExists when the (namespace, session_id) is taken; the
// transaction stays usable (only the statement failed).
func (x Sessions) InsertSession(ctx context.Context, r *SessionRow) error {
	res, err := x.q.ExecContext(ctx, x.s.query(qInsertWorkerSession), r.Namespace, r.SessionID,
		r.Connection, r.Queue, r.Requirements, r.Status, r.LeaseOwner, r.LeaseExpiresAt,
		r.TTLExpiresAt, r.ClosedAt, r.FailureReason, r.LeaseSeconds, r.TTLSeconds,
		r.MaxConcurrentActivities, r.CreateIfMissing, r.AllowReacquireAfterFailure,
		r.LastHeartbeatAt, r.CreatedAt, r.UpdatedAt)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return fmt.Errorf("%w: %s in namespace %s", ErrSessionExists, r.SessionID, r.Namespace)
		}
		return fmt.Errorf("%s: %w", qInsertWorkerSession, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	r.ID = id
	return nil
}

// UpdateSession writes back every mutable column of a row read by
// LockSession.
func (x Sessions) UpdateSession(ctx context.Context, r SessionRow) error {
	_, err := x.exec(ctx, qUpdateWorkerSession, r.Connection, r.Queue, r.Requirements,
		r.Status, r.LeaseOwner, r.LeaseExpiresAt, r.TTLExpiresAt, r.ClosedAt, r.FailureReason,
		r.LeaseSeconds, r.TTLSeconds, r.MaxConcurrentActivities, r.CreateIfMissing,
		r.AllowReacquireAfterFailure, r.LastHeartbeatAt, r.UpdatedAt, r.ID)
	return err
}

// CountWorkerLeasedSessions counts a worker's active sessions whose lease is
// unset or later than now, except exceptSessionID (the one being
// reacquired; "" excludes nothing).
func (x Sessions) CountWorkerLeasedSessions(ctx context.Context, namespace, workerID string, now time.Time, exceptSessionID string) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, x.q, &n, x.s.query(qCountWorkerLeasedSessions), namespace, workerID, now, exceptSessionID)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", qCountWorkerLeasedSessions, err)
	}
	return n, nil
}

// CountSessionActivities counts a session's running attempts: its
// processing jobs reserved by leaseOwner, except exceptJobID (0 excludes
// nothing). Jobs have no namespace, so a session id counts across them.
func (x Sessions) CountSessionActivities(ctx context.Context, sessionID, leaseOwner string, exceptJobID int64) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, x.q, &n, x.s.query(qCountSessionActivities), sessionID, leaseOwner, exceptJobID)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", qCountSessionActivities, err)
	}
	return n, nil
}

// ActiveSessionIDs lists a namespace's sessions whose status is active.
func (x Sessions) ActiveSessionIDs(ctx context.Context, namespace string) ([]string, error) {
	var ids []string
	if err := sqlx.SelectContext(ctx, x.q, &ids, x.s.query(qActiveWorkerSessionIDs), namespace); err != nil {
		return nil, fmt.Errorf("%s: %w", qActiveWorkerSessionIDs, err)
	}
	return ids, nil
}

// HeldSessionIDs lists the sessions a worker holds that are not closed.
func (x Sessions) HeldSessionIDs(ctx context.Context, namespace, workerID string) ([]string, error) {
	var ids []string
	if err := sqlx.SelectContext(ctx, x.q, &ids, x.s.query(qHeldWorkerSessionIDs), namespace, workerID); err != nil {
		return nil, fmt.Errorf("%s: %w", qHeldWorkerSessionIDs, err)
	}
	return ids, nil
}

// SessionMetrics counts a namespace's sessions by status (statuses without
// rows are absent).
func (x Sessions) SessionMetrics(ctx context.Context, namespace string) (map[string]int, error) {
	var rows []struct {
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, x.q, &rows, x.s.query(qWorkerSessionMetrics), namespace); err != nil {
		return nil, fmt.Errorf("%s: %w", qWorkerSessionMetrics, err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}
