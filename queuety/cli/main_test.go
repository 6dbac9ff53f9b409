package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testbin"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	store "github.com/queuety-go/queuety/sql"
)

func TestMain(m *testing.M) {
	// The stock binary (for the subprocess tests) builds while the
	// in-process tests run.
	go func() { _, _ = testbin.Queuety() }()
	code := m.Run()
	_, _ = testbin.Queuety() // never remove the directory under a running build
	testbin.Cleanup()
	os.Exit(code)
}

// stockBinary is the stock binary, built once per test run.
func stockBinary(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Queuety()
	require.NoError(t, err)
	return bin
}

// syncBuffer is testbin.SyncBuffer: the worker's goroutines log into it.
type syncBuffer = testbin.SyncBuffer

// result is one in-process run of the app.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("queuety %q: exit %d\n[stdout]\n%s[stderr]\n%s", r.args, r.code, r.stdout, r.stderr)
}

// runTimeout bounds one in-process run, so a hang fails the test instead of
// the whole package timing out.
const runTimeout = 30 * time.Second

// mainMu serializes in-process runs: cli.Main is not safe for concurrent
// use (urfave/cli v2 mutates its package-level HelpFlag and help command,
// and queuety/cli shares one jsonFlag among its commands), which
// `go test -race` reports when parallel tests call it at once.
var mainMu sync.Mutex

// run runs `queuety args...` in-process with the built-in handlers.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		mainMu.Lock()
		defer mainMu.Unlock()
		done <- cli.Main(append([]string{"queuety"}, args...), cli.Options{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Registry: queuety.NewRegistry()})
	}()
	select {
	case code := <-done:
		return result{args: args, code: code, stdout: out.String(), stderr: errb.String()}
	case <-time.After(runTimeout):
		t.Fatalf("queuety %q still running after %s\n[stdout]\n%s[stderr]\n%s", args, runTimeout, out.String(), errb.String())
		return result{}
	}
}

// runOK runs the app and requires exit 0.
func runOK(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, args...)
	require.Equal(t, cli.ExitOK, r.code, r.String())
	return r
}

// on prefixes args with --dsn dsn (global flags go before the command).
func on(dsn string, args ...string) []string { return append([]string{"--dsn", dsn}, args...) }

// newDB returns the DSN of a fresh database migrated by `queuety migrate`.
func newDB(t *testing.T) string {
	t.Helper()
	dsn := testdb.New(t)
	runOK(t, on(dsn, "migrate")...)
	return dsn
}

// openDB opens the test database directly, with the driver settings
// queuety-go uses (UTC times, parseTime).
func openDB(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	prepared, err := store.PrepareDSN(dsn)
	require.NoError(t, err)
	db, err := sqlx.Open("mysql", prepared)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

const (
	jobsTable = "wp_queuety_jobs"
	logsTable = "wp_queuety_logs"
)

// jobRow reads a job row of wp_queuety_jobs.
func jobRow(t *testing.T, db *sqlx.DB, id int64) store.JobRow {
	t.Helper()
	var j store.JobRow
	require.NoError(t, db.Unsafe().Get(&j, "SELECT * FROM `"+jobsTable+"` WHERE id = ?", id))
	return j
}

// logEvents lists a job's log events, oldest first.
func logEvents(t *testing.T, db *sqlx.DB, id int64) []string {
	t.Helper()
	var ev []string
	require.NoError(t, db.Select(&ev, "SELECT event FROM `"+logsTable+"` WHERE job_id = ? ORDER BY id", id))
	return ev
}

func exec1(t *testing.T, db *sqlx.DB, query string, args ...any) {
	t.Helper()
	_, err := db.Exec(query, args...)
	require.NoError(t, err, query)
}

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.Get(&n, query, args...), query)
	return n
}

// dispatched is what `dispatch --json` prints.
type dispatched struct {
	ID       int64 `json:"id"`
	Existing bool  `json:"existing"`
}

// dispatch runs `dispatch --json args...` (flags first, handler last) and
// returns what it printed.
func dispatch(t *testing.T, dsn string, args ...string) dispatched {
	t.Helper()
	r := runOK(t, on(dsn, append([]string{"dispatch", "--json"}, args...)...)...)
	var d dispatched
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.String())
	require.Positive(t, d.ID, r.String())
	return d
}

// decodeJSON decodes a run's stdout into v.
func decodeJSON(t *testing.T, r result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	require.NoError(t, dec.Decode(v), r.String())
}

// drain runs a real worker with the built-in handlers until no job is
// pending or processing, so jobs get their started/completed log rows.
func drain(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, PollInterval: 10 * time.Millisecond,
		ShutdownGrace: 5 * time.Second, RescueSchedule: "off"})
	require.NoError(t, err)
	defer c.Close()
	reg := queuety.NewRegistry()
	builtins.Register(reg)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	db := openDB(t, dsn)
	waitFor(t, 10*time.Second, "jobs drained", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status IN ('pending','processing')") == 0
	})
	require.NoError(t, w.Stop(ctx))
}

// waitFor polls cond until it holds or the timeout fails the test.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
