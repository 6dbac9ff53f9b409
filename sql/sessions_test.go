package store

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sessionRow(ns, id, owner string, now time.Time) *SessionRow {
	return &SessionRow{
		Namespace: ns, SessionID: id, Requirements: StringList{"gpu:nvidia-l4", "fs:/mnt/a"},
		Status: "active", LeaseOwner: String(owner),
		LeaseExpiresAt: sql.NullTime{Time: now.Add(2 * time.Minute), Valid: true},
		TTLExpiresAt:   sql.NullTime{Time: now.Add(30 * time.Minute), Valid: true},
		LeaseSeconds:   120, TTLSeconds: 1800, MaxConcurrentActivities: 1,
		CreateIfMissing: true, AllowReacquireAfterFailure: true,
		LastHeartbeatAt: sql.NullTime{Time: now, Valid: true}, CreatedAt: now, UpdatedAt: now,
	}
}

func TestWorkerRegistrationRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := e.s.Sessions()
	now := e.s.Now()
	w := WorkerRow{
		Namespace: "default", WorkerID: "w1", TaskQueue: "gpu", Queues: StringList{"gpu", "default"},
		Runtime: "go", SDKVersion: String("1.0"), Capabilities: StringList{"gpu:nvidia-l4", "fs:/mnt/é"},
		MaxConcurrentWorkerSessions: sql.NullInt64{Int64: 3, Valid: true}, HeartbeatIntervalSeconds: 10,
		TaskSlots: String(`{"session_available":1}`), LastHeartbeatAt: sql.NullTime{Time: now, Valid: true},
		RegisteredAt: now, UpdatedAt: now,
	}
	require.NoError(t, db.UpsertWorker(e.ctx, w))
	got, err := db.GetWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	w.Status = "active"
	require.Equal(t, w, *got)
	// Stored as PHP's json_encode writes them.
	var stored string
	require.NoError(t, e.db.GetContext(e.ctx, &stored, render("SELECT capabilities FROM {workers} WHERE worker_id = 'w1'", e.tables)))
	require.Equal(t, `["gpu:nvidia-l4","fs:\/mnt\/\u00e9"]`, stored)

	// Upsert again: fields replaced, registered_at kept, status active again.
	e.exec("UPDATE {workers} SET status = 'draining' WHERE worker_id = 'w1'")
	later := now.Add(time.Minute)
	w2 := w
	w2.TaskQueue, w2.Queues, w2.Capabilities = "cpu", StringList{"cpu"}, nil
	w2.MaxConcurrentWorkerSessions = sql.NullInt64{}
	w2.TaskSlots = sql.NullString{}
	w2.LastHeartbeatAt = sql.NullTime{Time: later, Valid: true}
	w2.RegisteredAt, w2.UpdatedAt = later, later
	require.NoError(t, db.UpsertWorker(e.ctx, w2))
	got, err = db.GetWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.Equal(t, "cpu", got.TaskQueue)
	require.Equal(t, StringList{}, got.Capabilities)
	require.Equal(t, "active", got.Status)
	require.False(t, got.MaxConcurrentWorkerSessions.Valid)
	require.Equal(t, now, got.RegisteredAt)
	require.Equal(t, later, got.UpdatedAt)

	// Heartbeat: sent fields replace, NULL keeps.
	require.NoError(t, db.HeartbeatWorker(e.ctx, "default", "w1", later.Add(time.Second), String(`{"a":1}`), sql.NullString{}))
	require.NoError(t, db.HeartbeatWorker(e.ctx, "default", "w1", later.Add(2*time.Second), sql.NullString{}, String(`{"b":2}`)))
	got, err = db.GetWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.Equal(t, later.Add(2*time.Second), got.LastHeartbeatAt.Time)
	require.Equal(t, String(`{"a":1}`), got.TaskSlots)
	require.Equal(t, String(`{"b":2}`), got.ProcessMetrics)
	require.NoError(t, db.HeartbeatWorker(e.ctx, "default", "ghost", later, sql.NullString{}, sql.NullString{}))

	// Locking read, listing, namespaces, deletion.
	require.NoError(t, db.UpsertWorker(e.ctx, WorkerRow{Namespace: "default", WorkerID: "a", TaskQueue: "q", Queues: StringList{"q"}, Runtime: "go", RegisteredAt: now, UpdatedAt: now}))
	require.NoError(t, db.UpsertWorker(e.ctx, WorkerRow{Namespace: "other", WorkerID: "w1", TaskQueue: "q", Queues: StringList{"q"}, Runtime: "go", RegisteredAt: now, UpdatedAt: now}))
	require.NoError(t, e.s.SessionTx(e.ctx, func(tx Sessions) error {
		l, err := tx.LockWorker(e.ctx, "default", "w1")
		require.NoError(t, err)
		require.Equal(t, "cpu", l.TaskQueue)
		none, err := tx.LockWorker(e.ctx, "default", "ghost")
		require.Nil(t, none)
		return err
	}))
	list, err := db.ListWorkers(e.ctx, "default")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"a", "w1"}, []string{list[0].WorkerID, list[1].WorkerID})
	found, err := db.DeleteWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.True(t, found)
	found, err = db.DeleteWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.False(t, found)
	got, err = db.GetWorker(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.Nil(t, got)
	got, err = db.GetWorker(e.ctx, "other", "w1")
	require.NoError(t, err)
	require.NotNil(t, got, "namespaces are apart")
}

func TestStringListScan(t *testing.T) {
	t.Parallel()
	var l StringList
	require.NoError(t, l.Scan(`{"1":"a","0":"b"}`))
	require.Equal(t, StringList{"a", "b"}, l, "a PHP array with keys is read by its values")
	require.NoError(t, l.Scan([]byte(`[]`)))
	require.Equal(t, StringList{}, l)
	require.NoError(t, l.Scan(nil))
	require.Nil(t, l)
	require.ErrorContains(t, l.Scan(`[1]`), "is not a string")
	require.ErrorContains(t, l.Scan(`"x"`), "not a JSON array")
	require.Error(t, l.Scan(`[`))
	v, err := StringList(nil).Value()
	require.NoError(t, err)
	require.Equal(t, "[]", v)
}

func TestWorkerSessionRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := e.s.Sessions()
	now := e.s.Now()

	var created SessionRow
	require.NoError(t, e.s.SessionTx(e.ctx, func(tx Sessions) error {
		none, err := tx.LockSession(e.ctx, "default", "s1")
		require.NoError(t, err)
		require.Nil(t, none)
		r := sessionRow("default", "s1", "w1", now)
		require.NoError(t, tx.InsertSession(e.ctx, r))
		require.NotZero(t, r.ID)
		// A duplicate fails only its statement; the transaction goes on.
		err = tx.InsertSession(e.ctx, sessionRow("default", "s1", "w2", now))
		require.ErrorIs(t, err, ErrSessionExists)
		got, err := tx.LockSession(e.ctx, "default", "s1")
		require.NoError(t, err)
		require.Equal(t, *r, *got)
		created = *got
		return nil
	}))

	// Update writes every mutable column back.
	upd := created
	upd.Connection, upd.Queue = String("redis"), String("gpu")
	upd.Requirements = StringList{}
	upd.Status, upd.FailureReason = "expired", String("lease_expired")
	upd.ClosedAt = sql.NullTime{Time: now.Add(time.Second), Valid: true}
	upd.LeaseExpiresAt, upd.LastHeartbeatAt = sql.NullTime{}, sql.NullTime{}
	upd.LeaseSeconds, upd.TTLSeconds, upd.MaxConcurrentActivities = 5, 6, 7
	upd.CreateIfMissing, upd.AllowReacquireAfterFailure = false, false
	upd.UpdatedAt = now.Add(3 * time.Second)
	require.NoError(t, db.UpdateSession(e.ctx, upd))
	var got *SessionRow
	require.NoError(t, e.s.SessionTx(e.ctx, func(tx Sessions) error {
		var err error
		got, err = tx.LockSession(e.ctx, "default", "s1")
		return err
	}))
	require.Equal(t, upd, *got)

	// Counting a worker's leased sessions.
	past := sql.NullTime{Time: now.Add(-time.Second), Valid: true}
	for _, r := range []*SessionRow{
		sessionRow("default", "live", "w1", now),
		sessionRow("default", "no-lease", "w1", now),
		sessionRow("default", "lapsed", "w1", now),
		sessionRow("default", "closed", "w1", now),
		sessionRow("default", "w2s", "w2", now),
		sessionRow("other", "live", "w1", now),
	} {
		switch r.SessionID {
		case "no-lease":
			r.LeaseExpiresAt = sql.NullTime{}
		case "lapsed":
			r.LeaseExpiresAt = past
		case "closed":
			r.Status = "closed"
		}
		require.NoError(t, db.InsertSession(e.ctx, r))
	}
	n, err := db.CountWorkerLeasedSessions(e.ctx, "default", "w1", now, "")
	require.NoError(t, err)
	require.Equal(t, 2, n, "live and no-lease")
	n, err = db.CountWorkerLeasedSessions(e.ctx, "default", "w1", now, "live")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	ids, err := db.ActiveSessionIDs(e.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, []string{"live", "no-lease", "lapsed", "w2s"}, ids)
	ids, err = db.HeldSessionIDs(e.ctx, "default", "w1")
	require.NoError(t, err)
	require.Equal(t, []string{"s1", "live", "no-lease", "lapsed"}, ids, "every status but closed")
	m, err := db.SessionMetrics(e.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, map[string]int{"active": 4, "closed": 1, "expired": 1}, m)

	// List: updated_at descending, then session id.
	e.exec("UPDATE {worker_sessions} SET updated_at = ? WHERE session_id IN ('w2s', 'closed') AND namespace = 'default'", now.Add(time.Hour))
	rows, err := db.ListSessions(e.ctx, "default")
	require.NoError(t, err)
	var order []string
	for _, r := range rows {
		order = append(order, r.SessionID)
	}
	require.Equal(t, []string{"closed", "w2s", "s1", "lapsed", "live", "no-lease"}, order)
}

// A session's running attempts are its processing jobs reserved by the
// holder, except the job being admitted.
func TestCountSessionActivities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := e.s.Sessions()
	job := func(session, status, owner string) int64 {
		id := e.dispatch(InsertJob{Handler: "H", Payload: []byte("[]"), SessionID: session})
		e.exec("UPDATE {jobs} SET status = ?, reserved_by = NULLIF(?, '') WHERE id = ?", status, owner, id)
		return id
	}
	a := job("s", "processing", "w1")
	job("s", "processing", "w1")
	job("s", "processing", "w2")
	job("s", "pending", "")
	job("s", "completed", "w1")
	job("t", "processing", "w1")
	n, err := db.CountSessionActivities(e.ctx, "s", "w1", 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = db.CountSessionActivities(e.ctx, "s", "w1", a)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = db.CountSessionActivities(e.ctx, "s", "w2", 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// The count runs on every session admission: it must read only the
// session's processing jobs through idx_qgo_session_processing, not scan
// every processing job (idx_status) or every job of the session.
func TestCountSessionActivitiesUsesItsIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// 4000 processing plain jobs, 2000 completed jobs of the session and
	// 3 processing ones: the shape where idx_status would read 4003 rows.
	fill := func(n int, status, session string) {
		e.exec(`INSERT INTO {jobs} (handler, payload, status, reserved_by, session_id)
			WITH RECURSIVE seq (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 100)
			SELECT 'H', '[]', ?, 'w1', NULLIF(?, '') FROM seq AS a CROSS JOIN seq AS b LIMIT ?`, status, session, n)
	}
	fill(4000, "processing", "")
	fill(2000, "completed", "s")
	fill(3, "processing", "s")
	e.exec("ANALYZE TABLE {jobs}")

	rows, err := e.db.QueryxContext(e.ctx, "EXPLAIN "+e.s.query(qCountSessionActivities), "s", "w1", 0)
	require.NoError(t, err)
	var plans []map[string]any
	for rows.Next() {
		m := map[string]any{}
		require.NoError(t, rows.MapScan(m))
		plans = append(plans, m)
	}
	require.NoError(t, rows.Err())
	require.Len(t, plans, 1)
	col := func(name string) string { b, _ := plans[0][name].([]byte); return string(b) } // NULL: ""
	require.Equal(t, "idx_qgo_session_processing", col("key"), "plan: %s", plans[0])
	require.Equal(t, "ref", col("type"), "plan: %s", plans[0])

	n, err := e.s.Sessions().CountSessionActivities(e.ctx, "s", "w1", 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)
}
