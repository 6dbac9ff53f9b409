package queuety

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// claimN runs one claim of up to n rows on w, as stepOnce does, and waits
// for the jobs it started.
func claimN(t *testing.T, w *Worker, n int) int {
	t.Helper()
	startUnclaimed(t, w)
	got, _, err := w.claim.round(context.Background(), w.claim.lanes[0], n)
	require.NoError(t, err)
	w.run.wg.Wait()
	require.Eventually(t, func() bool {
		return w.jobs.settlingCount() == 0
	}, 10*time.Second, time.Millisecond)
	return got
}

func completedAt(t *testing.T, c *Client, handler string) []time.Time {
	t.Helper()
	var at []time.Time
	require.NoError(t, c.store.DB().Select(&at, "SELECT created_at FROM `"+c.store.Tables()["logs"]+"` WHERE handler = ? AND event = 'completed' ORDER BY created_at", handler))
	return at
}

// Two workers, each claiming in batches, never complete more jobs of a
// handler limited to 2 per second than the limit allows: counted from the
// `completed` log rows, no window of the limiter's (the second of the check
// and the one before it) holds more than 2.
func TestRateLimitHoldsAcrossWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4 })
	var running, most atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("limited", func(context.Context, *Job) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		return nil
	}, WithRateLimit(2, time.Second))
	const jobs = 6
	for i := range jobs {
		_, err := c.Dispatch(ctx, "limited", map[string]int{"n": i})
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	startWorker(t, c, reg)
	waitFor(t, 60*time.Second, "every job completed", func() bool { return countStatus(t, c, store.StatusCompleted) == jobs })

	at := completedAt(t, c, "limited")
	require.Len(t, at, jobs)
	for i := range at {
		in := 0
		for _, other := range at {
			if !other.Before(at[i]) && !other.After(at[i].Add(time.Second)) {
				in++
			}
		}
		require.LessOrEqual(t, in, 2, "completions in the window from %s: %v", at[i], at)
	}
	require.LessOrEqual(t, most.Load(), int32(2), "never more than the limit running at once")
}

// A rate limit's slots go in claim order: while a concurrent claim holds
// the older of two jobs of a handler limited to one a minute (its row
// locked, so SKIP LOCKED hides it), a second claim does not spend the one
// slot on the newer job. Without the slot kept for the older row, which
// of the two ran depended on which claim lane took the named lock first.
func TestRateLimitSlotsGoInClaimOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, nil)
	var ran []int
	reg := NewRegistry()
	reg.HandleFunc("limited", func(_ context.Context, j *Job) error {
		var p struct{ N int }
		if err := j.Decode(&p); err != nil {
			return err
		}
		ran = append(ran, p.N)
		return nil
	}, WithRateLimit(1, time.Minute))
	older, err := c.Dispatch(ctx, "limited", map[string]int{"n": 1})
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, "limited", map[string]int{"n": 2})
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)

	other, err := c.store.DB().BeginTxx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Rollback() }) // a failed check must not leave the row locked
	var id int64
	require.NoError(t, other.Get(&id, "SELECT id FROM `"+c.store.Tables()["jobs"]+"` WHERE id = ? FOR UPDATE", older.ID))
	require.Equal(t, 0, claimN(t, w, 2), "the newer job waits while another claim holds the older")
	require.NoError(t, other.Rollback())

	require.Equal(t, 1, claimN(t, w, 2))
	require.Equal(t, 0, claimN(t, w, 2), "the limit is spent")
	require.Equal(t, []int{1}, ran, "the older job took the slot")
	require.Equal(t, 1, countStatus(t, c, store.StatusPending))
}

// A queue read again in one claim (its head jobs were deferred) does not
// take the rows it already took a second time: its own row locks do not
// hide them from SKIP LOCKED.
func TestClaimRereadTakesEachRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, nil)
	var runs atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("job", func(context.Context, *Job) error { runs.Add(1); return nil })
	held, err := c.Dispatch(ctx, "job", nil, ConcurrencyGroup("g", 1))
	require.NoError(t, err)
	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["jobs"]+"` SET status = 'processing', attempts = 1, reserved_at = NOW() WHERE id = ?", held.ID)
	require.NoError(t, err)
	for range 2 {
		_, err := c.Dispatch(ctx, "job", nil, ConcurrencyGroup("g", 1), WithPriority(PriorityHigh))
		require.NoError(t, err)
	}
	for range 3 {
		_, err := c.Dispatch(ctx, "job", nil)
		require.NoError(t, err)
	}
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 3, claimN(t, w, 4), "the three jobs outside the full group")
	require.Equal(t, int32(3), runs.Load())
	var started int
	require.NoError(t, c.store.DB().Get(&started, "SELECT COUNT(*) FROM `"+c.store.Tables()["logs"]+"` WHERE event = 'started'"))
	require.Equal(t, 3, started)
	require.Equal(t, 2, countStatus(t, c, store.StatusPending), "the group's jobs wait")
}

// Cost budgets (QUEUETY_RESOURCE_QUEUE/GROUP_COST_BUDGETS): a job whose
// cost would pass its queue's or group's budget stays pending, untouched;
// jobs of cost 0 are never refused.
func TestCostBudgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.QueueCostBudgets = map[string]int64{"default": 5, " ": 1}
		cfg.GroupCostBudgets = map[string]int64{"gpu": 2}
		cfg.Debug = true
		cfg.Queues = []string{"default", "other"}
	})
	release := make(chan struct{})
	reg := NewRegistry()
	reg.HandleFunc("job", func(ctx context.Context, _ *Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	var ids []int64
	for _, o := range [][]DispatchOption{
		{CostUnits(3)},                   // admitted: 3/5
		{CostUnits(3)},                   // refused: 3+3 > 5
		{CostUnits(1)},                   // cost 0 below: always admitted
		{CostUnits(2)},                   // admitted: 5/5
		{CostUnits(1), OnQueue("other")}, // no budget there
	} {
		d, err := c.Dispatch(ctx, "job", nil, o...)
		require.NoError(t, err)
		ids = append(ids, d.ID)
	}
	_, err := c.store.DB().Exec("UPDATE `"+c.store.Tables()["jobs"]+"` SET cost_units = 0 WHERE id = ?", ids[2])
	require.NoError(t, err)
	gpu1, err := c.Dispatch(ctx, "job", nil, OnQueue("other"), ConcurrencyGroup("gpu", 5), CostUnits(2))
	require.NoError(t, err)
	gpu2, err := c.Dispatch(ctx, "job", nil, OnQueue("other"), ConcurrencyGroup("gpu", 5), CostUnits(1))
	require.NoError(t, err)
	before := jobRow(t, c, ids[1])

	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	// The handlers hold their jobs processing until the rows are read.
	var n int
	done := make(chan struct{})
	go func() { defer close(done); n = claimN(t, w, 10) }()
	waitFor(t, 30*time.Second, "five jobs processing", func() bool { return countStatus(t, c, store.StatusProcessing) == 5 })
	for _, id := range []int64{ids[0], ids[2], ids[3], ids[4], gpu1.ID} {
		require.Equal(t, store.StatusProcessing, jobRow(t, c, id).Status, "job %d", id)
	}
	after := jobRow(t, c, ids[1])
	require.Equal(t, store.StatusPending, after.Status)
	require.Equal(t, before.Attempts, after.Attempts)
	require.Equal(t, before.AvailableAt, after.AvailableAt)
	require.False(t, after.ReservedAt.Valid)
	require.Equal(t, store.StatusPending, jobRow(t, c, gpu2.ID).Status, "group gpu: 2+1 > 2")

	var msgs []string
	require.NoError(t, c.store.DB().Select(&msgs, "SELECT JSON_UNQUOTE(JSON_EXTRACT(context, '$.message')) FROM `"+c.store.Tables()["logs"]+"` WHERE event = 'debug' AND JSON_EXTRACT(context, '$.message') LIKE '%Deferring%' ORDER BY id"))
	require.Contains(t, msgs, "Deferring job #2 (job): Queue 'default' cost budget is exhausted (3/5).")
	require.Contains(t, msgs, "Deferring job #7 (job): Concurrency group 'gpu' cost budget is exhausted (2/2).")
	close(release)
	<-done
	require.Equal(t, 5, n)
}

// Go step handlers declare what a PHP step class's config() would:
// WithStepMetadata, with WithMaxAttempts, WithBackoff and WithRateLimit on
// top; the engine writes them into the step's jobs.
func TestStepHandlerMetadataAtRegistration(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	reg.RegisterStep("Summarize", func(context.Context, *workflow.State) (*phpjson.Object, error) { return nil, nil },
		WithStepMetadata(workflow.HandlerMetadata{Queue: "gpu", MaxAttempts: 2, ConcurrencyGroup: "openai", ConcurrencyLimit: 2, CostUnits: 5}),
		WithMaxAttempts(7), WithBackoff(Backoff{List: []int{5, 30}}), WithRateLimit(10, time.Minute))
	m := reg.steps.HandlerMetadata("Summarize")
	backoff, err := phpjson.Encode(m.Backoff)
	require.NoError(t, err)
	require.Equal(t, "[5,30]", string(backoff))
	m.Backoff = phpjson.Null()
	require.Equal(t, workflow.HandlerMetadata{Queue: "gpu", MaxAttempts: 7, RateLimit: &workflow.RateLimit{Max: 10, Window: 60},
		ConcurrencyGroup: "openai", ConcurrencyLimit: 2, CostUnits: 5}, m)

	step, err := workflow.ParseStep(phpjson.ObjectValue(phpjson.NewObject().Set("type", phpjson.String("single")).Set("class", phpjson.String("Summarize"))))
	require.NoError(t, err)
	jobs, err := workflow.StepJobs(step, 1, workflow.DispatchDefaults{Queue: "default", MaxAttempts: 3}, reg.steps)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, `{"__queuety_runtime":{"max_attempts":7,"backoff":[5,30],"rate_limit":[10,60]}}`, string(jobs[0].Payload))
	require.Equal(t, "gpu", jobs[0].Queue)
	require.Equal(t, int64(5), jobs[0].CostUnits)
	require.Equal(t, "openai", jobs[0].ConcurrencyGroup)
}
