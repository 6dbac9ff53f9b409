package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// completedLogs writes n `completed` log rows of handler, as a worker (PHP
// or Go) writes them, with a duration and a memory peak.
func completedLogs(t *testing.T, c *Client, handler string, n int, ms, peakKB int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["logs"]+"` (job_id, handler, queue, event, attempt, duration_ms, memory_peak_kb) VALUES (0, ?, 'default', 'completed', 1, ?, ?)",
			handler, ms, peakKB)
		require.NoError(t, err)
	}
}

// The plugin's memory and time admission (ResourceManager::admit), from
// the handlers' recent completions: a job whose handler peaked above the
// memory the system has left (less the headroom) is deferred, pending and
// its attempt unspent, while the others run; so is, in a run with a time
// budget, a job whose handler's average duration would not end inside it.
// With QUEUETY_RESOURCE_ADMISSION off both run. A handler never seen runs.
func TestResourceAdmissionDefersByMemoryAndTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := NewRegistry()
	for _, h := range []string{"heavy", "slow", "light", "new"} {
		reg.HandleFunc(h, func(context.Context, *Job) error { return nil })
	}
	run := func(t *testing.T, mutate func(*Config)) map[string]string {
		c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4; mutate(cfg) })
		completedLogs(t, c, "heavy", 2, 100, 3_000_000) // 3 GB peak
		completedLogs(t, c, "slow", 2, 58_000, 1024)    // 58 s on average
		completedLogs(t, c, "light", 2, 10, 1024)
		ids := map[string]int64{}
		for _, h := range []string{"heavy", "slow", "light", "new"} {
			d, err := c.Dispatch(ctx, h, nil)
			require.NoError(t, err)
			ids[h] = d.ID
		}
		w, err := c.NewWorker(reg)
		require.NoError(t, err)
		w.claim.admit.resources.memory = func() (int64, bool) { return 2_000_000, true } // 2 GB left
		for stepOnce(t, w) > 0 {
		}
		out := map[string]string{}
		for h, id := range ids {
			j := jobRow(t, c, id)
			out[h] = j.Status
			if j.Status == store.StatusPending {
				require.Zero(t, j.Attempts, "%s: a deferred job spends no attempt", h)
			}
		}
		return out
	}
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string]string{"heavy": "pending", "slow": "completed", "light": "completed", "new": "completed"},
			run(t, func(*Config) {}))
	})
	t.Run("time budget", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string]string{"heavy": "pending", "slow": "pending", "light": "completed", "new": "completed"},
			run(t, func(cfg *Config) { cfg.TimeBudget = time.Minute })) // 58 s + 5 s headroom > 60 s
	})
	t.Run("system memory awareness off", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string]string{"heavy": "completed", "slow": "completed", "light": "completed", "new": "completed"},
			run(t, func(cfg *Config) { cfg.SystemMemoryAwarenessOff = true }))
	})
	t.Run("admission off", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string]string{"heavy": "completed", "slow": "completed", "light": "completed", "new": "completed"},
			run(t, func(cfg *Config) { cfg.ResourceAdmissionOff = true; cfg.TimeBudget = time.Minute }))
	})
}

// /proc/meminfo as ResourceManager reads it: MemAvailable, else MemFree,
// only with MemTotal.
func TestMemInfoAvailable(t *testing.T) {
	t.Parallel()
	kb, ok := memInfoAvailable("MemTotal:       16318412 kB\nMemFree:         1021904 kB\nMemAvailable:    9536240 kB\n")
	require.True(t, ok)
	require.Equal(t, int64(9536240), kb)
	kb, ok = memInfoAvailable("MemTotal: 100 kB\nMemFree: 40 kB\n")
	require.True(t, ok)
	require.Equal(t, int64(40), kb)
	_, ok = memInfoAvailable("MemFree: 40 kB\n")
	require.False(t, ok)
}
