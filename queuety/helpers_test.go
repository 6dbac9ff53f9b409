package queuety

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
)

// newTestClient opens a Client on a fresh database with the schema migrated.
func newTestClient(t *testing.T, mutate func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		DSN:            testdb.New(t),
		PollInterval:   10 * time.Millisecond,
		ShutdownGrace:  5 * time.Second,
		RescueSchedule: "off",
		Logger:         testLogger(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(context.Background())
	require.NoError(t, err)
	return c
}

func testLogger() *slog.Logger {
	if os.Getenv("QUEUETY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startWorker starts a worker and stops it at cleanup.
func startWorker(t *testing.T, c *Client, reg *Registry) *Worker {
	t.Helper()
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}

// workerService is the worker's background service of type S, for a test
// that waits on its signals (set them up before Start).
func workerService[S service](t *testing.T, w *Worker) S {
	t.Helper()
	for _, s := range w.services() {
		if s, ok := s.(S); ok {
			return s
		}
	}
	var zero S
	t.Fatalf("the worker has no %T", zero)
	return zero
}

// waitFor polls cond until it holds or the timeout fails the test.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countStatus counts jobs in a status.
func countStatus(t *testing.T, c *Client, status string) int {
	t.Helper()
	var n int
	require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE status = ?", status))
	return n
}

func jobRow(t *testing.T, c *Client, id int64) *store.JobRow {
	t.Helper()
	j, err := c.store.GetJob(context.Background(), id)
	require.NoError(t, err)
	return j
}

func jobLogs(t *testing.T, c *Client, id int64) []store.LogRow {
	t.Helper()
	l, err := c.store.JobLogs(context.Background(), id)
	require.NoError(t, err)
	return l
}

func logEvents(rows []store.LogRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Event
	}
	return out
}
