package queuety

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

func execSQL(t *testing.T, c *Client, q string, args ...any) {
	t.Helper()
	for suffix, name := range c.store.Tables() {
		q = replaceTable(q, suffix, name)
	}
	_, err := c.store.DB().Exec(q, args...)
	require.NoError(t, err)
}

func replaceTable(q, suffix, name string) string {
	return stringsReplaceAll(q, "{"+suffix+"}", "`"+name+"`")
}

func TestBadRowsAreBuriedAndTheWorkerKeepsGoing(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.ClaimAll = true })
	var ran atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("good", func(context.Context, *Job) error { ran.Add(1); return nil })
	ins := "INSERT INTO {jobs} (queue, handler, payload, priority, max_attempts) VALUES ('default', ?, ?, ?, 3)"
	execSQL(t, c, ins, "good", "{not json", 0)
	execSQL(t, c, ins, "good", `{"a":1}`, 9)
	execSQL(t, c, ins, "missing_handler", `{"a":1}`, 0)
	execSQL(t, c, ins, "good", `"a string"`, 0)
	execSQL(t, c, ins, "good", `{"fine":true}`, 0)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "all settled", func() bool {
		return countStatus(t, c, store.StatusBuried) == 4 && countStatus(t, c, store.StatusCompleted) == 1
	})
	require.EqualValues(t, 1, ran.Load())
	wantPrefix := map[int64]string{
		1: "Invalid payload: not valid JSON",
		2: "Invalid priority 9: Queuety priorities are 0 (low) to 3 (urgent).",
		3: "Handler not found: missing_handler",
		4: "Invalid payload: a JSON object is required, got string.",
	}
	for id, prefix := range wantPrefix {
		j := jobRow(t, c, id)
		require.Equal(t, store.StatusBuried, j.Status)
		require.Equal(t, 1, j.Attempts, "buried on the first attempt, not retried")
		require.Contains(t, j.ErrorMessage.String, prefix)
		require.Equal(t, []string{"started", "buried"}, logEvents(jobLogs(t, c, id)))
	}
	require.Equal(t, "RuntimeException", jobLogs(t, c, 3)[1].ErrorClass.String, "as PHP names a missing handler")
}

func TestWorkerLeavesUnknownHandlersToPHP(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("go_side", func(context.Context, *Job) error { return nil })
	php, err := c.Dispatch(context.Background(), `App\Jobs\PhpOnly`, nil)
	require.NoError(t, err)
	goJob, err := c.Dispatch(context.Background(), "go_side", nil)
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "go job", func() bool { return jobRow(t, c, goJob.ID).Status == store.StatusCompleted })
	time.Sleep(100 * time.Millisecond)
	j := jobRow(t, c, php.ID)
	require.Equal(t, store.StatusPending, j.Status)
	require.Zero(t, j.Attempts)
}

func TestHeartbeatsKeepALongJobFromTheStaleSweep(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) {
		cfg.StaleTimeout = 2 * time.Second
		cfg.HeartbeatInterval = 300 * time.Millisecond
		cfg.RescueSchedule = "@every 1s"
	})
	reg := NewRegistry()
	var calls atomic.Int32
	reg.HandleFunc("long", func(ctx context.Context, j *Job) error {
		calls.Add(1)
		require.NoError(t, j.Heartbeat(ctx, map[string]int{"processed": 50, "total": 100}))
		time.Sleep(4 * time.Second)
		return nil
	})
	d, err := c.Dispatch(context.Background(), "long", nil)
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "completion", func() bool { return jobRow(t, c, d.ID).Status == store.StatusCompleted })
	j := jobRow(t, c, d.ID)
	require.Equal(t, 1, j.Attempts)
	require.JSONEq(t, `{"processed":50,"total":100}`, j.HeartbeatData.String)
	require.Equal(t, []string{"started", "completed"}, logEvents(jobLogs(t, c, d.ID)), "never rescued")
	require.EqualValues(t, 1, calls.Load())
}

func TestLostJobIsCancelledAndItsResultRefused(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.HeartbeatInterval = 200 * time.Millisecond })
	reg := NewRegistry()
	cause := make(chan error, 1)
	reg.HandleFunc("victim", func(ctx context.Context, j *Job) error {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	d, err := c.Dispatch(context.Background(), "victim", nil)
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "running", func() bool { return jobRow(t, c, d.ID).Status == store.StatusProcessing })
	// Another worker (or a PHP stale sweep) took the row over.
	execSQL(t, c, "UPDATE {jobs} SET reserved_by = 'someone-else' WHERE id = ?", d.ID)
	select {
	case err := <-cause:
		require.ErrorIs(t, err, ErrJobLost)
	case <-time.After(5 * time.Second):
		t.Fatal("handler was not cancelled")
	}
	waitFor(t, 5*time.Second, "refusal counted", func() bool { return w.Stats().Refused == 1 })
	j := jobRow(t, c, d.ID)
	require.Equal(t, store.StatusProcessing, j.Status, "the new owner's row is untouched")
	require.Equal(t, "someone-else", j.ReservedBy.String)
}

func TestPausedQueueIsSkippedAndQueuesAreStrictlyOrdered(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Queues = []string{"critical", "default", "low"}
		cfg.Concurrency = 1
		cfg.PauseCacheTTL = 10 * time.Millisecond
	})
	ctx := context.Background()
	var mu sync.Mutex
	var order []string
	reg := NewRegistry()
	reg.HandleFunc("rec", func(ctx context.Context, j *Job) error {
		mu.Lock()
		order = append(order, j.Queue)
		mu.Unlock()
		return nil
	})
	require.NoError(t, c.Pause(ctx, "low"))
	for _, q := range []string{"low", "default", "critical", "default", "critical", "low"} {
		_, err := c.Dispatch(ctx, "rec", map[string]any{"q": q}, OnQueue(q))
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "critical and default", func() bool { return countStatus(t, c, store.StatusCompleted) == 4 })
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, 2, countStatus(t, c, store.StatusPending), "paused queue untouched")
	mu.Lock()
	require.Equal(t, []string{"critical", "critical", "default", "default"}, order)
	mu.Unlock()
	require.NoError(t, c.Resume(ctx, "low"))
	waitFor(t, 5*time.Second, "low after resume", func() bool { return countStatus(t, c, store.StatusCompleted) == 6 })
}

func TestPriorityThenAgeWithinAQueue(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1 })
	ctx := context.Background()
	var mu sync.Mutex
	var order []int
	reg := NewRegistry()
	reg.Register("rec", Typed(func(ctx context.Context, j *Job, p struct{ N int }) error {
		mu.Lock()
		order = append(order, p.N)
		mu.Unlock()
		return nil
	}))
	for i, p := range []Priority{PriorityLow, PriorityUrgent, PriorityNormal, PriorityUrgent, PriorityHigh} {
		_, err := c.Dispatch(ctx, "rec", map[string]any{"N": i}, WithPriority(p))
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "all", func() bool { return countStatus(t, c, store.StatusCompleted) == 5 })
	require.Equal(t, []int{1, 3, 4, 2, 0}, order)
}

func TestDependentJobWaitsForItsDependency(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	release := make(chan struct{})
	var secondAt, firstDone atomic.Int64
	reg := NewRegistry()
	reg.HandleFunc("first", func(ctx context.Context, j *Job) error {
		<-release
		firstDone.Store(time.Now().UnixNano())
		return nil
	})
	reg.HandleFunc("second", func(ctx context.Context, j *Job) error {
		secondAt.Store(time.Now().UnixNano())
		return nil
	})
	a, err := c.Dispatch(ctx, "first", nil)
	require.NoError(t, err)
	b, err := c.Dispatch(ctx, "second", nil, After(a.ID))
	require.NoError(t, err)
	startWorker(t, c, reg)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, store.StatusPending, jobRow(t, c, b.ID).Status, "not claimable before its dependency completes")
	close(release)
	waitFor(t, 5*time.Second, "second", func() bool { return jobRow(t, c, b.ID).Status == store.StatusCompleted })
	require.Greater(t, secondAt.Load(), firstDone.Load())
}

func TestStopHandsBackJobsThatOutliveTheGrace(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.ShutdownGrace = 300 * time.Millisecond })
	reg := NewRegistry()
	reg.HandleFunc("polite", func(ctx context.Context, j *Job) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	reg.HandleFunc("stubborn", func(ctx context.Context, j *Job) error {
		time.Sleep(10 * time.Second) // ignores cancellation
		return nil
	})
	ctx := context.Background()
	p, err := c.Dispatch(ctx, "polite", nil)
	require.NoError(t, err)
	s, err := c.Dispatch(ctx, "stubborn", nil)
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	waitFor(t, 5*time.Second, "both running", func() bool { return countStatus(t, c, store.StatusProcessing) == 2 })
	start := time.Now()
	require.NoError(t, w.Stop(ctx))
	require.Less(t, time.Since(start), 300*time.Millisecond+abandonAfter+2*time.Second)
	for _, id := range []int64{p.ID, s.ID} {
		j := jobRow(t, c, id)
		require.Equal(t, store.StatusPending, j.Status, "job %d handed back", id)
		require.Zero(t, j.Attempts, "attempt restored")
		require.Empty(t, jobLogs(t, c, id), "its started row is gone with the attempt")
	}
	require.EqualValues(t, 2, w.Stats().HandedBack)
}

func TestStopDuringClaimRollsTheWindowBack(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	var ran atomic.Int32
	reg.HandleFunc("x", func(context.Context, *Job) error { ran.Add(1); return nil })
	for i := 0; i < 3; i++ {
		_, err := c.Dispatch(context.Background(), "x", map[string]any{"i": i})
		require.NoError(t, err)
	}
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	// Stop "arrives" after the rows are selected and before any starts.
	w.run.start(context.Background())
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	n, _, err := w.claim.round(stopped, w.claim.lanes[0], 10)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, ran.Load())
	require.Equal(t, 3, countStatus(t, c, store.StatusPending))
	var attempts int
	require.NoError(t, c.store.DB().Get(&attempts, "SELECT SUM(attempts) FROM `"+c.store.Tables()["jobs"]+"`"))
	require.Zero(t, attempts)
}

func TestWorkerSurvivesLostDatabaseConnections(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 20
		cfg.StaleTimeout = 2 * time.Second
		cfg.RescueSchedule = "@every 1s"
		cfg.Backoff = Backoff{List: []int{0}}
	})
	const jobs = 3000
	seen := sync.Map{}
	var runs atomic.Int64
	reg := NewRegistry()
	reg.HandleFunc("n", func(ctx context.Context, j *Job) error {
		runs.Add(1)
		seen.Store(j.ID, true)
		time.Sleep(time.Millisecond)
		return nil
	})
	js := make([]store.InsertJob, jobs)
	for i := range js {
		js[i] = store.InsertJob{Queue: DefaultQueue, Handler: "n", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), MaxAttempts: 3}
	}
	_, err := c.store.InsertJobs(context.Background(), js)
	require.NoError(t, err)
	startWorker(t, c, reg)

	// Kill every server connection of the test database, repeatedly.
	cfg, err := mysql.ParseDSN(c.cfg.DSN)
	require.NoError(t, err)
	dbName := cfg.DBName
	cfg.DBName = ""
	admin, err := sqlx.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer admin.Close()
	killed := 0
	for i := 0; i < 15; i++ {
		time.Sleep(80 * time.Millisecond)
		var ids []int64
		require.NoError(t, admin.Select(&ids, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ?", dbName))
		for _, id := range ids {
			if _, err := admin.Exec(fmt.Sprintf("KILL %d", id)); err == nil {
				killed++
			}
		}
	}
	require.NotZero(t, killed)
	waitFor(t, 60*time.Second, "all completed", func() bool { return countStatus(t, c, store.StatusCompleted) == jobs })
	require.Zero(t, countStatus(t, c, store.StatusBuried))
	t.Logf("killed %d connections; %d handler runs for %d jobs (re-runs are at-least-once after a lost commit)", killed, runs.Load(), jobs)
}

func TestRecoverStaleRetriesOrBuriesWithBackoff(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.StaleTimeout = 10 * time.Second })
	ctx := context.Background()
	reg := NewRegistry()
	reg.HandleFunc("h", func(context.Context, *Job) error { return nil }, WithBackoff(Backoff{List: []int{7}}))
	retry, err := c.Dispatch(ctx, "h", nil)
	require.NoError(t, err)
	bury, err := c.Dispatch(ctx, "h", nil, MaxAttempts(1))
	require.NoError(t, err)
	fresh, err := c.Dispatch(ctx, "h", nil)
	require.NoError(t, err)
	execSQL(t, c, "UPDATE {jobs} SET status = 'processing', attempts = 1, reserved_at = NOW() - INTERVAL 1 MINUTE WHERE id IN (?, ?)", retry.ID, bury.ID)
	execSQL(t, c, "UPDATE {jobs} SET status = 'processing', attempts = 1, reserved_at = NOW() WHERE id = ?", fresh.ID)
	res, err := c.RecoverStale(ctx, reg)
	require.NoError(t, err)
	require.Equal(t, Rescued{Retried: 1, Buried: 1}, res)
	j := jobRow(t, c, retry.ID)
	require.Equal(t, store.StatusPending, j.Status)
	require.InDelta(t, 7, time.Until(j.AvailableAt).Seconds(), 2, "the handler's backoff list")
	j = jobRow(t, c, bury.ID)
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, store.StaleMessage, j.ErrorMessage.String)
	require.Equal(t, store.StatusProcessing, jobRow(t, c, fresh.ID).Status)
}

func TestConfigValidationNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Concurrency: -1}, "concurrency -1"},
		{Config{Queues: []string{""}}, "queue name is empty"},
		{Config{StaleTimeout: time.Minute, HeartbeatInterval: time.Minute}, "heartbeat interval 1m0s"},
		{Config{RescueSchedule: "every day"}, `rescue schedule "every day"`},
		{Config{Backoff: Backoff{Strategy: "sometimes"}}, `unknown strategy "sometimes"`},
		{Config{ClaimLanes: 100}, "claim lanes 100"},
	} {
		err := tc.cfg.Validate()
		require.ErrorContains(t, err, tc.want)
	}
	var ok Config
	require.NoError(t, ok.Validate())
	require.Equal(t, []string{"default"}, ok.Queues)
	require.Equal(t, time.Minute, ok.HeartbeatInterval, "stale timeout / 4, at most a minute")
}

func TestOpenRefusesAnUnreachableServerClearly(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), Config{DSN: "root@tcp(127.0.0.1:1)/x"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot reach MySQL at tcp(127.0.0.1:1)/x")
	_, err = Open(context.Background(), Config{})
	require.ErrorContains(t, err, "--dsn")
}

func TestConcurrencyGroupLimitIsRespected(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 10 })
	var cur, peak atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("limited", func(ctx context.Context, j *Job) error {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		cur.Add(-1)
		return nil
	})
	for i := 0; i < 12; i++ {
		_, err := c.Dispatch(context.Background(), "limited", map[string]any{"i": i}, ConcurrencyGroup("api", 2))
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "all", func() bool { return countStatus(t, c, store.StatusCompleted) == 12 })
	require.LessOrEqual(t, peak.Load(), int32(2), "never more than the group's limit at once")
	var attempts int
	require.NoError(t, c.store.DB().Get(&attempts, "SELECT MAX(attempts) FROM `"+c.store.Tables()["jobs"]+"`"))
	require.Equal(t, 1, attempts, "deferral spends no attempt")
}

// A batch job whose batch row is gone (pruned) runs like any other job,
// as BatchManager finds no batch to count it in (batches with PHP
// callbacks: TestBatchAndChainWithPHPCallbacksLeftToPHPWithoutPool).
func TestBatchJobOfAMissingBatchRuns(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("b", func(context.Context, *Job) error { return nil })
	d, err := c.Dispatch(context.Background(), "b", nil, InBatch(7))
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	require.Equal(t, store.StatusCompleted, jobRow(t, c, d.ID).Status)
}

func TestFallbackHandlerTakesUnknownHandlers(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	var got sync.Map
	reg := NewRegistry()
	reg.HandleFunc("go_side", func(context.Context, *Job) error { got.Store("go_side", "go"); return nil })
	reg.SetFallback(HandlerFunc(func(ctx context.Context, j *Job) error { got.Store(j.Handler, "fallback"); return nil }))
	for _, h := range []string{"go_side", `App\Jobs\PhpOnly`} {
		_, err := c.Dispatch(context.Background(), h, nil)
		require.NoError(t, err)
	}
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "both", func() bool { return countStatus(t, c, store.StatusCompleted) == 2 })
	v, _ := got.Load("go_side")
	require.Equal(t, "go", v)
	v, _ = got.Load(`App\Jobs\PhpOnly`)
	require.Equal(t, "fallback", v)
}
