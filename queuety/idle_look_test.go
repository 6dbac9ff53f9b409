package queuety

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIdleWorkerLooksBeforeItClaims: a worker with nothing to do polls
// with one plain read, not a claim transaction, and still claims a job
// another process writes (PHP's dispatch: a bare INSERT, no kick) within
// a few poll intervals. A job in a paused queue does not wake it.
func TestIdleWorkerLooksBeforeItClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Queues = []string{"default", "low"}
		cfg.PauseCacheTTL = 1 // read the queue states on every claim
	})
	var ran atomic.Int64
	reg := NewRegistry()
	reg.Register("count", Typed(func(context.Context, *Job, map[string]any) error {
		ran.Add(1)
		return nil
	}))
	require.NoError(t, c.Pause(ctx, "low"))
	insert := func(queue string) {
		t.Helper()
		_, err := c.store.DB().Exec(fmt.Sprintf("INSERT INTO `%s` (queue, handler, payload, priority, status, attempts, max_attempts, available_at, created_at) "+
			"VALUES (?, 'count', '[]', 0, 'pending', 0, 3, NOW(), NOW())", c.store.Tables()["jobs"]), queue)
		require.NoError(t, err)
	}
	insert("low")
	w := startWorker(t, c, reg)

	waitFor(t, 5*time.Second, "idle looks", func() bool { return w.Stats().IdleLooks >= 20 })
	st := w.Stats()
	require.LessOrEqual(t, st.ClaimRounds, int64(len(w.claim.lanes)), "claim transactions while idle: only each lane's first round claims, %+v", st)
	require.Zero(t, ran.Load(), "the job of the paused queue")

	insert("default")
	waitFor(t, 5*time.Second, "the job PHP wrote", func() bool { return ran.Load() == 1 })
	require.Greater(t, w.Stats().ClaimRounds, st.ClaimRounds)

	require.NoError(t, c.Resume(ctx, "low"))
	waitFor(t, 5*time.Second, "the resumed queue's job", func() bool { return ran.Load() == 2 })
}

// TestDebugWorkerClaimsEveryPoll: with QUEUETY_DEBUG the idle look is
// off, because every poll writes the plugin's "Attempting to claim job
// from queue." row, and only a claim does.
func TestDebugWorkerClaimsEveryPoll(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Debug = true })
	reg := NewRegistry()
	reg.Register("count", Typed(func(context.Context, *Job, map[string]any) error { return nil }))
	w := startWorker(t, c, reg)
	// A round counts when it opens its claim, and its rows land at its
	// commit: wait for the rows.
	waitFor(t, 5*time.Second, "five polls' debug rows", func() bool {
		var rows int
		require.NoError(t, c.store.DB().Get(&rows, "SELECT COUNT(*) FROM `"+c.store.Tables()["logs"]+
			"` WHERE event = 'debug' AND context LIKE '%Attempting to claim%'"))
		return rows >= 5
	})
	st := w.Stats()
	require.Zero(t, st.IdleLooks, "%+v", st)
	require.GreaterOrEqual(t, st.ClaimRounds, int64(5))
}
