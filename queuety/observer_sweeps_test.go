package queuety

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sweepRecorder is an Observer that records what the sweeps tell it.
type sweepRecorder struct {
	mu        sync.Mutex
	waits     map[string]int
	rescued   [2]int
	retention []string
	deleted   map[RetentionKind]int
}

func (r *sweepRecorder) ObserveClaim(time.Duration, int)                   {}
func (r *sweepRecorder) ObserveJob(string, string, Outcome, time.Duration) {}
func (r *sweepRecorder) ObserveQueueWait(queue string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[string]int{}
	}
	r.waits[queue]++
}
func (r *sweepRecorder) ObserveRescue(retried, buried int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rescued[0] += retried
	r.rescued[1] += buried
}
func (r *sweepRecorder) ObserveRetention(result string, deleted map[RetentionKind]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retention = append(r.retention, result)
	if r.deleted == nil {
		r.deleted = map[RetentionKind]int{}
	}
	for k, n := range deleted {
		r.deleted[k] += n
	}
}

// The retention service tells its Observer each sweep's result and rows:
// skipped while another process holds the lock, then ok with what it
// deleted.
func TestRetentionTellsTheObserver(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, retentionConfig)
	ctx := context.Background()
	writeRetentionFixture(t, c)
	rec := &sweepRecorder{}
	policy := RetentionPolicy{RetainCompleted: 7 * 24 * time.Hour, RetainBuried: 30 * 24 * time.Hour,
		RetainWorkflows: 7 * 24 * time.Hour, RetainLogs: 30 * 24 * time.Hour, RetainEvents: 30 * 24 * time.Hour}
	release, ok, err := c.store.RetentionLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	other, err := Open(ctx, func() Config { cfg := c.cfg; cfg.Observer = rec; return cfg }())
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	r := newRetention(other, policy, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Equal(t, "skipped", r.RunOnce(ctx))
	release()
	require.Equal(t, "ok", r.RunOnce(ctx))
	require.Equal(t, []string{"skipped", "ok"}, rec.retention)
	require.Equal(t, 3, rec.deleted[RetainWorkflows])
	require.Positive(t, rec.deleted[RetainCompleted])
}

// The stale sweep tells its Observer what it recovered; the worker tells
// it the queue wait of each job it claims.
func TestRescueAndQueueWaitTellTheObserver(t *testing.T) {
	t.Parallel()
	rec := &sweepRecorder{}
	c := newTestClient(t, func(cfg *Config) { cfg.Observer = rec })
	ctx := context.Background()
	ins := "INSERT INTO {jobs} (queue, handler, payload, status, attempts, max_attempts, reserved_at) VALUES ('default', 'noop', '{}', 'processing', ?, 3, NOW() - INTERVAL 2 HOUR)"
	execSQL(t, c, ins, 1) // attempts left: retried
	execSQL(t, c, ins, 3) // none left: buried
	newRescuer(c, NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil).RunOnce(ctx)
	require.Equal(t, [2]int{1, 1}, rec.rescued)

	var ran sync.WaitGroup
	ran.Add(3)
	reg := NewRegistry()
	reg.HandleFunc("wait", func(context.Context, *Job) error { ran.Done(); return nil })
	for range 3 {
		_, err := c.Dispatch(ctx, "wait", map[string]any{}, OnQueue("mail"))
		require.NoError(t, err)
	}
	c2, err := Open(ctx, func() Config { cfg := c.cfg; cfg.Queues = []string{"mail"}; cfg.RescueSchedule = "off"; return cfg }())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Close() })
	w, err := c2.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	ran.Wait()
	require.NoError(t, w.Stop(ctx))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, 3, rec.waits["mail"])
}
