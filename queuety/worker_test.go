package queuety

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

func TestWorkerCompletesJobWithQueuetyLogRows(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	var got atomic.Value
	reg := NewRegistry()
	reg.HandleFunc("send_email", func(ctx context.Context, j *Job) error {
		var p struct {
			To string `json:"to"`
		}
		require.NoError(t, j.Decode(&p))
		var all map[string]any
		require.NoError(t, j.Decode(&all))
		if _, seen := all["__queuety_runtime"]; !seen {
			got.Store(p.To) // the reserved key is stripped, as the plugin's public_payload
		}
		return nil
	})
	d, err := c.Dispatch(ctx, "send_email", map[string]any{"to": "a@b.c", "__queuety_runtime": map[string]any{"max_attempts": 2}})
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "job completed", func() bool { return jobRow(t, c, d.ID).Status == store.StatusCompleted })
	require.Equal(t, "a@b.c", got.Load())
	j := jobRow(t, c, d.ID)
	require.Equal(t, 1, j.Attempts)
	require.True(t, j.CompletedAt.Valid)
	require.True(t, j.ReservedAt.Valid)
	logs := jobLogs(t, c, d.ID)
	require.Equal(t, []string{"started", "completed"}, logEvents(logs))
	require.EqualValues(t, 1, logs[0].Attempt.Int64)
	require.False(t, logs[0].DurationMS.Valid)
	require.EqualValues(t, 1, logs[1].Attempt.Int64)
	require.True(t, logs[1].DurationMS.Valid)
	require.True(t, logs[1].MemoryPeakKB.Valid)
	require.Equal(t, "send_email", logs[1].Handler)
	require.Equal(t, "default", logs[1].Queue)
}

type runtimeErr struct{ msg string }

func (e runtimeErr) Error() string      { return e.msg }
func (e runtimeErr) ErrorClass() string { return "RuntimeException" }

func TestWorkerRetriesWithBackoffThenBuries(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	reg := NewRegistry()
	var calls atomic.Int32
	reg.HandleFunc("flaky", func(ctx context.Context, j *Job) error {
		calls.Add(1)
		return runtimeErr{"boom: test"}
	})
	d, err := c.Dispatch(ctx, "flaky", map[string]any{"why": "test"}, MaxAttempts(2))
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "first failure", func() bool { return w.Stats().Retried == 1 })
	j := jobRow(t, c, d.ID)
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 1, j.Attempts)
	require.False(t, j.ReservedAt.Valid)
	require.False(t, j.ErrorMessage.Valid)
	// exponential backoff: 2^1 * 30 = 60 s after the failure
	require.InDelta(t, 60, time.Until(j.AvailableAt).Seconds(), 3)
	require.Equal(t, []string{"started", "failed", "retried"}, logEvents(jobLogs(t, c, d.ID)))

	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["jobs"]+"` SET available_at = NOW() WHERE id = ?", d.ID)
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "burial", func() bool { return jobRow(t, c, d.ID).Status == store.StatusBuried })
	j = jobRow(t, c, d.ID)
	require.Equal(t, "boom: test", j.ErrorMessage.String)
	require.Equal(t, 2, j.Attempts)
	logs := jobLogs(t, c, d.ID)
	require.Equal(t, []string{"started", "failed", "retried", "started", "buried"}, logEvents(logs))
	require.Equal(t, "RuntimeException", logs[4].ErrorClass.String)
	require.Equal(t, "boom: test", logs[4].ErrorMessage.String)
	require.EqualValues(t, 2, logs[4].Attempt.Int64)
	require.EqualValues(t, 2, calls.Load())
}

func TestWorkerManyJobsEachOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 20 })
	ctx := context.Background()
	const n = 3000
	var mu sync.Mutex
	seen := map[int64]int{}
	reg := NewRegistry()
	reg.HandleFunc("count", func(ctx context.Context, j *Job) error {
		mu.Lock()
		seen[j.ID]++
		mu.Unlock()
		return nil
	})
	for i := 0; i < n; i++ {
		_, err := c.Dispatch(ctx, "count", map[string]any{"i": i})
		require.NoError(t, err)
	}
	for i := 0; i < 3; i++ {
		startWorker(t, c, reg)
	}
	waitFor(t, 60*time.Second, "all completed", func() bool { return countStatus(t, c, store.StatusCompleted) == n })
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, n)
	for id, k := range seen {
		require.Equal(t, 1, k, "job %d ran %d times", id, k)
	}
}

func TestWorkerPanicIsAFailure(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("boom", func(ctx context.Context, j *Job) error { panic("kaboom") })
	d, err := c.Dispatch(context.Background(), "boom", nil, MaxAttempts(1))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "burial", func() bool { return jobRow(t, c, d.ID).Status == store.StatusBuried })
	logs := jobLogs(t, c, d.ID)
	require.Equal(t, "panic: kaboom", logs[1].ErrorMessage.String)
	require.Equal(t, "panic", logs[1].ErrorClass.String)
	require.Contains(t, logs[1].ErrorTrace.String, "worker_test.go")
}

func TestWorkerTimeoutFromRuntimeOverride(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("slow", func(ctx context.Context, j *Job) error {
		<-ctx.Done()
		return ctx.Err()
	})
	d, err := c.Dispatch(context.Background(), "slow", map[string]any{
		"__queuety_runtime": map[string]any{"max_attempts": 1, "timeout_seconds": 1},
	})
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "burial", func() bool { return jobRow(t, c, d.ID).Status == store.StatusBuried })
	logs := jobLogs(t, c, d.ID)
	require.Equal(t, "Job exceeded maximum execution time of 1 seconds.", logs[1].ErrorMessage.String)
	require.Equal(t, `Queuety\Exceptions\TimeoutException`, logs[1].ErrorClass.String)
}
