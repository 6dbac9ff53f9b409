package queuety

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// insertBatch writes a batch row as BatchManager::create does.
func insertBatch(t *testing.T, c *Client, total int, options string) int64 {
	t.Helper()
	res, err := c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["batches"]+"` (name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options) VALUES (NULL, ?, ?, 0, '[]', ?)",
		total, total, options)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	return id
}

func batchRow(t *testing.T, c *Client, id int64) store.BatchRow {
	t.Helper()
	b, err := c.store.GetBatch(context.Background(), id)
	require.NoError(t, err)
	return b
}

// Many jobs of one batch finished by two workers at once: every
// completion and burial is counted exactly once, the batch finishes when
// the last job does, and then/catch/finally each fire once.
func TestBatchCountersExactUnderTwoWorkers(t *testing.T) {
	t.Parallel()
	const n = 120
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 8; cfg.ClaimLanes = 2 })
	ctx := context.Background()
	id := insertBatch(t, c, n, `{"then":"Then","catch":"Catch","finally":"Finally","allow_failures":true}`)
	var fails []int64
	for i := 0; i < n; i++ {
		h := "ok"
		if i%10 == 0 {
			h = "bad"
		}
		d, err := c.Dispatch(ctx, h, map[string]int{"i": i}, InBatch(id), MaxAttempts(1))
		require.NoError(t, err)
		if h == "bad" {
			fails = append(fails, d.ID)
		}
	}
	var fired sync.Map
	var counts [3]atomic.Int32
	var last atomic.Pointer[Batch]
	newReg := func() *Registry {
		reg := NewRegistry()
		reg.HandleFunc("ok", func(context.Context, *Job) error { return nil })
		reg.HandleFunc("bad", func(context.Context, *Job) error { return fmt.Errorf("bad job") })
		for i, name := range []string{"Then", "Catch", "Finally"} {
			reg.RegisterBatchCallback(name, func(_ context.Context, b *Batch) error {
				counts[i].Add(1)
				fired.Store(name, true)
				if name == "Finally" {
					last.Store(b)
				}
				return nil
			})
		}
		return reg
	}
	w1 := startWorker(t, c, newReg())
	w2 := startWorker(t, c, newReg())
	waitFor(t, 30*time.Second, "the batch's finally", func() bool { return counts[2].Load() == 1 })
	require.Equal(t, int64(n), w1.Stats().Claimed+w2.Stats().Claimed, "each job ran once")
	b := batchRow(t, c, id)
	require.Equal(t, int64(0), b.PendingJobs)
	require.Equal(t, int64(len(fails)), b.FailedJobs)
	require.True(t, b.FinishedAt.Valid)
	var ids []int64
	require.NoError(t, json.Unmarshal([]byte(b.FailedJobIDs), &ids))
	require.ElementsMatch(t, fails, ids)
	require.Equal(t, int32(1), counts[0].Load(), "then once (allow_failures)")
	require.Equal(t, int32(1), counts[1].Load(), "catch on the first burial only")
	require.Equal(t, int64(0), last.Load().PendingJobs, "finally sees the batch as committed")
}

// Without a PHP pool, a batch whose callbacks are PHP classes is left to
// PHP workers; one whose callbacks all have Go implementations is run.
// Chain links with a PHP catch are left alone the same way.
func TestBatchAndChainWithPHPCallbacksLeftToPHPWithoutPool(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	php := insertBatch(t, c, 1, `{"then":"PhpThen"}`)
	goBatch := insertBatch(t, c, 1, `{"finally":"GoFinally"}`)
	plain := insertBatch(t, c, 1, `[]`)
	dPHP, err := c.Dispatch(ctx, "ok", map[string]int{"i": 1}, InBatch(php))
	require.NoError(t, err)
	dGo, err := c.Dispatch(ctx, "ok", map[string]int{"i": 2}, InBatch(goBatch))
	require.NoError(t, err)
	dPlain, err := c.Dispatch(ctx, "ok", map[string]int{"i": 3}, InBatch(plain))
	require.NoError(t, err)
	dChainPHP, err := c.Dispatch(ctx, "ok", json.RawMessage(`{"x":1,"__chain_catch":"PhpCatch"}`))
	require.NoError(t, err)
	dChainGo, err := c.Dispatch(ctx, "ok", json.RawMessage(`{"x":2,"__chain_catch":"GoCatch"}`))
	require.NoError(t, err)
	reg := NewRegistry()
	var seen sync.Map
	reg.HandleFunc("ok", func(_ context.Context, j *Job) error {
		seen.Store(j.ID, string(j.RawPayload))
		return nil
	})
	var finally atomic.Int32
	reg.RegisterBatchCallback("GoFinally", func(context.Context, *Batch) error { finally.Add(1); return nil })
	reg.RegisterChainCatch("GoCatch", func(context.Context, *Job, error) error { return nil })
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.Equal(t, 1, stepOnce(t, w))
	}
	require.Equal(t, 0, stepOnce(t, w), "the PHP ones are not claimed")
	require.Equal(t, store.StatusCompleted, jobRow(t, c, dGo.ID).Status)
	require.Equal(t, store.StatusCompleted, jobRow(t, c, dPlain.ID).Status)
	require.Equal(t, store.StatusCompleted, jobRow(t, c, dChainGo.ID).Status)
	require.Equal(t, int32(1), finally.Load())
	require.Equal(t, store.StatusPending, jobRow(t, c, dPHP.ID).Status)
	require.Equal(t, store.StatusPending, jobRow(t, c, dChainPHP.ID).Status)
	require.Equal(t, int64(1), batchRow(t, c, php).PendingJobs)
	require.False(t, batchRow(t, c, php).FinishedAt.Valid)
	v, _ := seen.Load(dChainGo.ID)
	require.Equal(t, `{"x":2,"__chain_catch":"GoCatch"}`, v, "raw payload kept; handlers' decoded payload has no __chain_catch")
}

// A retried failure of a batch job leaves the batch alone; only its
// burial counts.
func TestBatchRetriedFailureTouchesNothing(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	id := insertBatch(t, c, 1, `[]`)
	d, err := c.Dispatch(ctx, "bad", map[string]int{"i": 1}, InBatch(id), MaxAttempts(2))
	require.NoError(t, err)
	reg := NewRegistry()
	reg.HandleFunc("bad", func(context.Context, *Job) error { return fmt.Errorf("nope") })
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	require.Equal(t, store.StatusPending, jobRow(t, c, d.ID).Status)
	b := batchRow(t, c, id)
	require.Equal(t, int64(1), b.PendingJobs)
	require.Equal(t, int64(0), b.FailedJobs)
	require.Equal(t, "[]", b.FailedJobIDs)
	_, err = c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	b = batchRow(t, c, id)
	require.Equal(t, store.StatusBuried, jobRow(t, c, d.ID).Status)
	require.Equal(t, int64(0), b.PendingJobs)
	require.Equal(t, int64(1), b.FailedJobs)
	require.Equal(t, fmt.Sprintf("[%d]", d.ID), b.FailedJobIDs)
	require.True(t, b.FinishedAt.Valid)
}

// A batch dispatched from Go writes the rows create_batch() writes.
func TestDispatchBatchWritesThePluginsRows(t *testing.T) {
	t.Parallel()
	f := loadFixture2(t, "batch_then_catch_finally.json")
	c := newTestClient(t, nil)
	id, ids, err := c.DispatchBatch(context.Background(), BatchSpec{Name: "import", Then: "BatchThenCallback",
		Catch: "BatchCatchCallback", Finally: "BatchFinallyCallback"}, []BatchJob{
		{Handler: "noop", Payload: json.RawMessage(`{"i":1}`)},
		{Handler: "flaky", Payload: json.RawMessage(`{"why":"batch"}`), Options: []DispatchOption{MaxAttempts(1)}},
		{Handler: "noop", Payload: json.RawMessage(`{"i":3}`)},
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), id)
	require.Equal(t, []int64{1, 2, 3}, ids)
	compareJobs(t, c, "dispatch", rowsOf(f.Snapshots[0], "jobs"))
	compareTable(t, c, "dispatch", "batches", rowsOf(f.Snapshots[0], "batches"))

	f = loadFixture2(t, "batch_allow_failures.json")
	c = newTestClient(t, nil)
	_, _, err = c.DispatchBatch(context.Background(), BatchSpec{Then: "BatchThenCallback", Catch: "BatchCatchCallback",
		Finally: "BatchFinallyCallback", AllowFailures: true}, nil)
	require.NoError(t, err)
	want := rowsOf(f.Snapshots[0], "batches")[0]
	b := batchRow(t, c, 1)
	require.Equal(t, want["options"], b.Options)
	require.Equal(t, want["name"] == nil, !b.Name.Valid)

	_, _, err = c.DispatchBatch(context.Background(), BatchSpec{}, []BatchJob{{Handler: "x", Options: []DispatchOption{Unique()}}})
	require.ErrorContains(t, err, "do not apply to a batch's jobs")
}

// Two jobs of one batch buried at once by one worker: the first burial
// fires catch, the second (the batch's last job) finally. The plugin runs
// catch, then finally; so does the worker, even when the catch is slow
// and the finally's commit came right after: catch here does not return
// until both burials are committed and finally has had time to start.
func TestBatchCatchRunsBeforeFinally(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 2 })
	ctx := context.Background()
	id := insertBatch(t, c, 2, `{"catch":"Catch","finally":"Finally"}`)
	for i := 0; i < 2; i++ {
		_, err := c.Dispatch(ctx, "bad", map[string]int{"i": i}, InBatch(id), MaxAttempts(1))
		require.NoError(t, err)
	}
	var started sync.WaitGroup
	started.Add(2)
	var mu sync.Mutex
	var order []string
	finallyStarted := make(chan struct{})
	reg := NewRegistry()
	reg.HandleFunc("bad", func(context.Context, *Job) error {
		started.Done()
		started.Wait() // both run at once, so both burials come close together
		return fmt.Errorf("bad job")
	})
	reg.RegisterBatchCallback("Catch", func(context.Context, *Batch) error {
		for !batchRow(t, c, id).FinishedAt.Valid {
			time.Sleep(5 * time.Millisecond)
		}
		select { // finally's commit is in: give it the chance to overtake
		case <-finallyStarted:
		case <-time.After(2 * time.Second):
		}
		mu.Lock()
		order = append(order, "catch")
		mu.Unlock()
		return nil
	})
	reg.RegisterBatchCallback("Finally", func(context.Context, *Batch) error {
		close(finallyStarted)
		mu.Lock()
		order = append(order, "finally")
		mu.Unlock()
		return nil
	})
	startWorker(t, c, reg)
	waitFor(t, 30*time.Second, "both callbacks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 2
	})
	require.Equal(t, []string{"catch", "finally"}, order)
}

// Dispatch, a batch and the standalone row builder refuse the handler
// names Queuety keeps for its own jobs, as Registry.Register does, and
// write nothing.
func TestDispatchRefusesReservedHandlerNames(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	for _, h := range []string{"__queuety_cron_my_hook", "__queuety_delay", machineActionHandler} {
		_, err := c.Dispatch(ctx, h, nil)
		require.ErrorContains(t, err, "reserved", h)
		_, _, err = c.DispatchBatch(ctx, BatchSpec{}, []BatchJob{{Handler: "ok"}, {Handler: h}})
		require.ErrorContains(t, err, "reserved", h)
		_, err = DispatchRow(h, nil)
		require.ErrorContains(t, err, "reserved", h)
		require.ErrorContains(t, CheckDispatch(h), "reserved", h)
	}
	var n int
	require.NoError(t, c.store.DB().Get(&n, "SELECT (SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"`) + (SELECT COUNT(*) FROM `"+c.store.Tables()["batches"]+"`)"))
	require.Zero(t, n)
}
