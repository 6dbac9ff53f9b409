package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

func summaryOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

// work --once runs one job, --max-jobs N exactly N, whatever the
// concurrency, and each exits 0 with what it did.
func TestWorkOnceAndMaxJobs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	for i := 0; i < 6; i++ {
		runOK(t, on(dsn, "dispatch", "queuety.noop")...)
	}
	r := runOK(t, on(dsn, "work", "--once", "--concurrency", "8", "--json")...)
	require.Equal(t, map[string]any{"processed": 1.0, "completed": 1.0, "retried": 0.0, "buried": 0.0, "stopped": "max-jobs"}, summaryOf(t, r.stdout))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))

	r = runOK(t, on(dsn, "work", "--max-jobs", "3", "--concurrency", "8", "--claim-lanes", "4")...)
	require.Equal(t, "Worker stopped (max-jobs): 3 jobs (3 completed, 0 retried, 0 buried).\n", r.stdout)
	require.Equal(t, 4, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'pending'"))

	// --max-jobs larger than the backlog: the budget is not spent, so it
	// runs until stopped; with --stop-when-empty it exits once drained.
	r = runOK(t, on(dsn, "work", "--max-jobs", "50", "--stop-when-empty")...)
	require.Equal(t, "Worker stopped (empty): 2 jobs (2 completed, 0 retried, 0 buried).\n", r.stdout)

	// --once with nothing due exits at once, as the plugin's.
	r = runOK(t, on(dsn, "work", "--once", "--json")...)
	require.Equal(t, 0.0, summaryOf(t, r.stdout)["processed"])
	require.Equal(t, "empty", summaryOf(t, r.stdout)["stopped"])

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--once", "--max-jobs", "2"}, "--once and --max-jobs: --once is --max-jobs 1 --stop-when-empty, pick one"},
		{[]string{"--max-jobs", "-1"}, "--max-jobs -1: must not be negative (0: no limit)"},
		{[]string{"--max-time", "-5s"}, "--max-time -5s: must not be negative (0: no limit)"},
	} {
		r := run(t, on(dsn, append([]string{"work"}, tc.args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want)
	}
}

// flush runs everything due on its queues, in order, then exits: a failing
// TestWorkOncePHPClass: a fresh `work --once` (a cron run) with a PHP pool
// runs a job whose handler is a PHP class it has not met, once. The claim
// first defers the row while the pool reads the class's settings; that
// round is not "empty", so the worker claims again instead of stopping.
func TestWorkOncePHPClass(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	app := filepath.Join(dir, "app.php")
	require.NoError(t, os.WriteFile(app, []byte(`<?php
final class OnceCheck implements Queuety\Handler
{
    public function handle(array $payload): void
    {
        file_put_contents(`+"'"+marker+"'"+`, "ran\n", FILE_APPEND);
    }

    public function config(): array
    {
        return [];
    }
}
`), 0o644))
	runOK(t, on(dsn, "migrate")...)
	runOK(t, on(dsn, "dispatch", "OnceCheck")...)
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)
	r := runOK(t, on(dsn, "work", "--once", "--json", "--php", "php "+worker+" --bootstrap "+app, "--php-workers", "1")...)
	require.Equal(t, map[string]any{"processed": 1.0, "completed": 1.0, "retried": 0.0, "buried": 0.0, "stopped": "max-jobs"}, summaryOf(t, r.stdout), r.String())
	ran, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, "ran\n", string(ran))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))
}

// job is retried once and left for its backoff, a delayed job left alone,
// other queues untouched.
func TestFlush(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	for i := 0; i < 4; i++ {
		runOK(t, on(dsn, "dispatch", "queuety.noop")...)
	}
	runOK(t, on(dsn, "dispatch", "queuety.noop", "--queue", "critical")...)
	runOK(t, on(dsn, "dispatch", "queuety.noop", "--queue", "other")...)
	runOK(t, on(dsn, "dispatch", "queuety.fail", "--payload", `{"message":"nope"}`)...)
	runOK(t, on(dsn, "dispatch", "queuety.noop", "--delay", "1h")...)

	r := runOK(t, on(dsn, "flush", "--queue", "critical,default")...)
	require.Equal(t, "Flushed 6 jobs.\n", r.stdout)
	require.Equal(t, 5, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'completed'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE handler = 'queuety.fail' AND status = 'pending' AND attempts = 1 AND available_at > NOW()"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE queue = 'other' AND status = 'pending'"))
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE queue = 'default' AND status = 'pending'"))

	r = runOK(t, on(dsn, "flush", "--json")...)
	require.Equal(t, map[string]any{"processed": 0.0, "completed": 0.0, "retried": 0.0, "buried": 0.0, "stopped": "empty"}, summaryOf(t, r.stdout))
}

// --max-time stops claiming after the time and lets the running job
// finish, as SIGTERM does: the job behind it is not started.
func TestWorkMaxTime(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	// The window must hold the first claim on a loaded machine (200 ms
	// did not, once in a full run), and the job must outlast it.
	runOK(t, on(dsn, "dispatch", "queuety.sleep", "--payload", `{"ms":4000}`)...)
	runOK(t, on(dsn, "dispatch", "queuety.sleep", "--payload", `{"ms":4000}`)...)
	r := runOK(t, on(dsn, "work", "--concurrency", "1", "--max-time", "2s", "--json")...)
	require.Equal(t, map[string]any{"processed": 1.0, "completed": 1.0, "retried": 0.0, "buried": 0.0, "stopped": "max-time"}, summaryOf(t, r.stdout))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE status = 'pending'"))
}
