package queuety

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
