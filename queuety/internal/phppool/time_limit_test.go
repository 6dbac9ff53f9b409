package phppool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// A job's time limit runs from when a PHP process takes it, not while it
// waits for a free one: with one process and two slots, the second of two
// 1.2 s jobs with a 2 s limit waits about 1.2 s and still completes (it
// timed out when the wait counted).
func TestTimeLimitStartsWhenAProcessTakesTheJob(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	job := map[string]any{"handler": "sleeps", "payload": map[string]any{
		"ms": 1200, "__queuety_runtime": map[string]any{"max_attempts": 1, "timeout_seconds": 2},
	}}
	ids := phpDispatch(t, c, job, job)
	startWorker(t, c, pool)
	waitFor(t, 20*time.Second, "both jobs finished", func() bool {
		for _, id := range ids {
			if s := jobRow(t, c, id).Status; s != store.StatusCompleted && s != store.StatusBuried {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		r := jobRow(t, c, id)
		msg := ""
		if r.ErrorMessage.Valid {
			msg = r.ErrorMessage.String
		}
		if r.Status != store.StatusCompleted {
			t.Fatalf("job %d %s: %s", id, r.Status, msg)
		}
	}
}

// A Contracts\Job's $timeout above the daemon's job timeout is honoured,
// as the plugin's worker lets $timeout replace its global limit: a 1.5 s
// job of a class with $timeout = 30 completes under a 1 s job timeout
// (it was cut at 1 s and buried, its $tries being 1). The class's settings
// come from the pool's metadata read, before the job runs.
func TestJobClassTimeoutAboveTheJobTimeoutIsHonoured(t *testing.T) {
	t.Parallel()
	c := newClient(t, func(cfg *queuety.Config) { cfg.JobTimeout = time.Second })
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	m, err := pool.ClassMetadata(context.Background(), "LongTimeoutJob")
	require.NoError(t, err)
	require.NotNil(t, m.Job, "a Contracts\\Job's own settings")
	require.Equal(t, int64(30), m.Job.Timeout)
	require.Equal(t, int64(1), m.Job.Tries)
	ids := phpDispatch(t, c, map[string]any{"handler": "LongTimeoutJob", "payload": map[string]any{"ms": 1500}})
	startWorker(t, c, pool)
	waitFor(t, 20*time.Second, "the job finished", func() bool {
		s := jobRow(t, c, ids[0]).Status
		return s == store.StatusCompleted || s == store.StatusBuried
	})
	r := jobRow(t, c, ids[0])
	require.Equal(t, store.StatusCompleted, r.Status, "error: %s", r.ErrorMessage.String)
	require.Equal(t, 1, r.Attempts)
}
