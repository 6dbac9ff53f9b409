package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/testdb"
)

// testEnv is one test's database: its own schema, a Store on the default
// "wp_" naming and a fake app clock set to the wall clock at the start (the
// database's NOW() is always real time).
type testEnv struct {
	t      *testing.T
	ctx    context.Context
	dsn    string
	db     *sqlx.DB
	tables Tables
	clk    *clock.Fake
	s      *Store
}

// newEmptyEnv opens a fresh, empty database.
func newEmptyEnv(t *testing.T) *testEnv {
	return newEnvNamed(t, Naming{DBPrefix: "wp_"}, false)
}

// newEnv opens a fresh database migrated to the current schema.
func newEnv(t *testing.T) *testEnv {
	return newEnvNamed(t, Naming{DBPrefix: "wp_"}, true)
}

func newEnvNamed(t *testing.T, n Naming, migrate bool) *testEnv {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.New(t)
	db, err := Open(ctx, dsn, 8, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	tables, err := n.Resolve()
	require.NoError(t, err)
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s, err := New(db, tables, clk)
	require.NoError(t, err)
	e := &testEnv{t: t, ctx: ctx, dsn: dsn, db: db, tables: tables, clk: clk, s: s}
	if migrate {
		_, err := s.Migrate(ctx)
		require.NoError(t, err)
	}
	return e
}

// exec runs SQL with {suffix} table placeholders.
func (e *testEnv) exec(q string, args ...any) sql.Result {
	e.t.Helper()
	res, err := e.db.ExecContext(e.ctx, render(q, e.tables), args...)
	require.NoError(e.t, err, q)
	return res
}

// count runs a COUNT-style query with {suffix} placeholders.
func (e *testEnv) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.GetContext(e.ctx, &n, render(q, e.tables), args...), q)
	return n
}

// dispatch inserts a job with Queuety's dispatch defaults filled in.
func (e *testEnv) dispatch(p InsertJob) int64 {
	e.t.Helper()
	if p.Queue == "" {
		p.Queue = "default"
	}
	if p.Handler == "" {
		p.Handler = "noop"
	}
	if p.Payload == nil {
		p.Payload = []byte(`[]`)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.CostUnits == 0 {
		p.CostUnits = 1
	}
	id, existing, err := e.s.InsertJob(e.ctx, p)
	require.NoError(e.t, err)
	require.False(e.t, existing)
	return id
}

// dispatchN inserts n default jobs and returns their ids.
func (e *testEnv) dispatchN(n int, p InsertJob) []int64 {
	e.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = e.dispatch(p)
	}
	return ids
}

func (e *testEnv) job(id int64) *JobRow {
	e.t.Helper()
	j, err := e.s.GetJob(e.ctx, id)
	require.NoError(e.t, err)
	return j
}

func (e *testEnv) logs(id int64) []LogRow {
	e.t.Helper()
	l, err := e.s.JobLogs(e.ctx, id)
	require.NoError(e.t, err)
	return l
}

// hold makes a row processing, reserved now by worker with the given
// attempts, as a claim by that worker would have left it.
func (e *testEnv) hold(id int64, worker string, attempts int) Attempt {
	e.t.Helper()
	e.exec("UPDATE {jobs} SET status = 'processing', reserved_at = NOW(), reserved_by = ?, attempts = ? WHERE id = ?", worker, attempts, id)
	return Attempt{ID: id, Attempt: attempts, WorkerID: worker}
}

// claimRunning claims the given number of jobs of a queue for worker through
// a real claim window, leaving them processing.
func (e *testEnv) claimRunning(worker, queue string, limit int) []JobRow {
	e.t.Helper()
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(e.t, err)
	rows, err := c.Select(e.ctx, ClaimParams{Queue: queue, Limit: limit})
	require.NoError(e.t, err)
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	require.NoError(e.t, c.Commit(e.ctx, ClaimCommit{WorkerID: worker, Running: ids}))
	return rows
}

// logRow is a log row for job id with an attempt.
func logRow(id int64, event string, attempt int) LogRow {
	return LogRow{JobID: Int(id), Handler: "noop", Queue: "default", Event: event, Attempt: Int(int64(attempt))}
}

// events lists the (event, attempt) pairs of log rows, in order.
func events(rows []LogRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Event
		if r.Attempt.Valid {
			out[i] += "#" + strconv.FormatInt(r.Attempt.Int64, 10)
		}
	}
	return out
}

// requireRecent asserts a DB NOW() value was written within the last minute.
func requireRecent(t *testing.T, v sql.NullTime, what string) {
	t.Helper()
	require.True(t, v.Valid, "%s is NULL", what)
	require.WithinDuration(t, time.Now().UTC(), v.Time, time.Minute, what)
	require.Equal(t, time.UTC, v.Time.Location(), what)
}

func TestStoreNowTruncatesToSeconds(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.FixedZone("X", 3600)))
	db, err := sqlx.Open("mysql", testdb.ServerDSN()) // lazy: never connects here
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, mustResolve(t, Naming{DBPrefix: "wp_"}), clk)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 4, 4, 6, 7, 0, time.UTC), s.Now())
	require.Equal(t, "2026-03-04 04:06:07", DateTime(clk.Now()))
}

func mustResolve(t *testing.T, n Naming) Tables {
	t.Helper()
	tables, err := n.Resolve()
	require.NoError(t, err)
	return tables
}

func TestNewDefaultsAndAccessors(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	s, err := New(e.db, e.tables, nil) // nil clock: the wall clock
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().UTC(), s.Now(), 2*time.Second)
	require.Equal(t, time.UTC, s.Now().Location())
	require.Same(t, e.db, s.DB())
	require.Equal(t, e.tables, s.Tables())
	require.PanicsWithValue(t, "store: unknown query no-such-query", func() { s.query("no-such-query") })
}

// TestInTx checks the transaction helper retries deadlocks and lock wait
// timeouts, and only those, with each try rolled back.
func TestInTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	insert := func(tx *sqlx.Tx, q string) error {
		_, err := tx.ExecContext(e.ctx, render("INSERT INTO {queue_states} (queue, paused) VALUES (?, 1)", e.tables), q)
		return err
	}
	paused := func() []string {
		qs, err := e.s.PausedQueues(e.ctx)
		require.NoError(t, err)
		return qs
	}

	calls := 0
	err := e.s.inTx(e.ctx, func(tx *sqlx.Tx) error {
		calls++
		if err := insert(tx, "try"+strconv.Itoa(calls)); err != nil {
			return err
		}
		if calls < 3 {
			return &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls)
	require.Equal(t, []string{"try3"}, paused(), "only the successful try committed")

	calls = 0
	err = e.s.inTx(e.ctx, func(tx *sqlx.Tx) error {
		calls++
		require.NoError(t, insert(tx, "boom"))
		return errors.New("boom")
	})
	require.EqualError(t, err, "boom")
	require.Equal(t, 1, calls, "not transient: no retry")
	require.Equal(t, []string{"try3"}, paused())

	calls = 0
	err = e.s.inTx(e.ctx, func(*sqlx.Tx) error {
		calls++
		return &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}
	})
	require.True(t, Transient(err))
	require.Equal(t, 8, calls, "gives up after 8 tries")

	ctx, cancel := context.WithCancel(e.ctx)
	calls = 0
	err = e.s.inTx(ctx, func(*sqlx.Tx) error {
		calls++
		cancel()
		return &mysql.MySQLError{Number: 1213}
	})
	require.Equal(t, 1, calls)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, Transient(err), "the deadlock is kept in the error")
}
