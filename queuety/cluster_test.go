package queuety

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/commiteater"
	store "github.com/queuety-go/queuety/sql"
)

// With row coordination (what a Galera node gets), a concurrency group of
// limit 1 claimed by three workers never runs two jobs at once: the
// admission lock is a row written in the claim, not GET_LOCK. (Across a
// cluster's nodes: internal/chaos TestChaosGaleraGroupLimit.)
func TestConcurrencyGroupLimitWithRowCoordination(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4; cfg.Coordination = "rows" })
	require.Equal(t, store.CoordinationRows, c.store.Coordination())
	var cur, overlaps, runs atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("single", func(ctx context.Context, j *Job) error {
		if cur.Add(1) > 1 {
			overlaps.Add(1)
		}
		runs.Add(1)
		time.Sleep(5 * time.Millisecond)
		cur.Add(-1)
		return nil
	})
	const n = 30
	for i := range n {
		_, err := c.Dispatch(context.Background(), "single", map[string]any{"i": i}, ConcurrencyGroup("one", 1))
		require.NoError(t, err)
	}
	for range 3 {
		startWorker(t, c, reg)
	}
	waitFor(t, 60*time.Second, "all", func() bool { return countStatus(t, c, store.StatusCompleted) == n })
	require.Zero(t, overlaps.Load(), "two jobs of a limit-1 group ran at once")
	require.Equal(t, int32(n), runs.Load(), "each job ran once")
}

// Coordination and claim slices are checked like every other setting.
func TestClusterSettingsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), Config{DSN: "root@tcp(127.0.0.1:1)/x", Coordination: "galera-ish"})
	require.ErrorContains(t, err, `coordination "galera-ish"`)
	_, err = Open(context.Background(), Config{DSN: "root@tcp(127.0.0.1:1)/x", ClaimSlices: "maybe"})
	require.ErrorContains(t, err, `claim slices "maybe"`)
}

// A claim whose COMMIT the server applied but whose answer was lost (the
// connection died during it, as when a Galera writer is killed) runs its
// jobs at once, each once: the worker reads back the rows it holds. Before,
// they stayed processing until the stale sweep (off here, so they would
// stay for good).
func TestUnansweredClaimCommitRunsTheClaimedJobs(t *testing.T) {
	t.Parallel()
	direct := newTestClient(t, nil)
	p := commiteater.New(t, direct.cfg.DSN)
	c := newTestClient(t, func(cfg *Config) { cfg.DSN = p.DSN; cfg.Concurrency = 8 })
	runs := newRunCounter()
	reg := NewRegistry()
	reg.HandleFunc("count", func(_ context.Context, j *Job) error { runs.add(j.ID); return nil })
	ids := dispatchN(t, direct, "count", 5)
	p.ArmAfter("status = 'processing', reserved_at = NOW()") // the claim's write (claim-running)
	startWorker(t, c, reg)
	waitFor(t, 30*time.Second, "all completed", func() bool { return countStatus(t, direct, store.StatusCompleted) == len(ids) })
	require.EqualValues(t, 1, p.Eaten(), "a claim's COMMIT lost its answer")
	for _, id := range ids {
		require.Equal(t, 1, runs.get(id), "job %d", id)
	}
	require.Zero(t, countStatus(t, direct, store.StatusProcessing))
}

// lineCounter counts log records whose message contains a string.
type lineCounter struct {
	slog.Handler
	want string
	n    *atomic.Int32
}

func (h lineCounter) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		h.n.Add(1)
	}
	return nil
}

func (h lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h lineCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lineCounter) WithGroup(string) slog.Handler            { return h }

// Claims the server rolls back (here a trigger answers the claim's log
// insert with a deadlock, 1213, as a cluster's certification failure is
// reported) are counted in the worker's stats, and said at INFO once they
// are more than occasional; nothing runs until a claim commits, then each
// job once.
func TestRolledBackClaimsAreCountedAndLogged(t *testing.T) {
	t.Parallel()
	var lines atomic.Int32
	c := newTestClient(t, func(cfg *Config) {
		cfg.Logger = slog.New(lineCounter{Handler: slog.DiscardHandler, want: "claims rolled back by the server", n: &lines})
	})
	runs := newRunCounter()
	reg := NewRegistry()
	reg.HandleFunc("count", func(_ context.Context, j *Job) error { runs.add(j.ID); return nil })
	ids := dispatchN(t, c, "count", 3)
	execSQL(t, c, "CREATE TRIGGER conflict_started BEFORE INSERT ON {logs} FOR EACH ROW "+
		"IF NEW.event = 'started' THEN SIGNAL SQLSTATE '40001' SET MESSAGE_TEXT = 'conflict by test', MYSQL_ERRNO = 1213; END IF")
	w := startWorker(t, c, reg)
	waitFor(t, 30*time.Second, "25 rolled-back claims", func() bool { return w.Stats().ClaimRollbacks >= 25 })
	require.Zero(t, runs.total(), "a handler ran on a rolled-back claim")
	require.Positive(t, lines.Load(), "no INFO line about the rolled-back claims")
	execSQL(t, c, "DROP TRIGGER conflict_started")
	waitFor(t, 30*time.Second, "all completed", func() bool { return countStatus(t, c, store.StatusCompleted) == len(ids) })
	for _, id := range ids {
		require.Equal(t, 1, runs.get(id))
	}
	m := w.claim.metrics()
	require.Contains(t, string(m), `"claim_rollbacks":`)
}
