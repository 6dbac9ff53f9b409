package phppool_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// These tests run the whole path: PHP dispatches with the bridge, a Go
// worker claims the rows, the pool runs them in PHP, and the rows end as
// Queuety's would.

func newClient(t *testing.T, mutate func(*queuety.Config)) *queuety.Client {
	t.Helper()
	cfg := queuety.Config{
		DSN: testdb.New(t), PollInterval: 10 * time.Millisecond, ShutdownGrace: 5 * time.Second,
		RescueSchedule: "off", Logger: testLogger(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := queuety.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(context.Background())
	require.NoError(t, err)
	return c
}

// phpDispatch dispatches jobs from PHP through the bridge.
func phpDispatch(t *testing.T, c *queuety.Client, jobs ...map[string]any) []int64 {
	t.Helper()
	php := requirePHP(t)
	cfg, err := mysql.ParseDSN(c.Config().DSN)
	require.NoError(t, err)
	spec, err := json.Marshal(jobs)
	require.NoError(t, err)
	out, err := exec.Command(php, "testdata/dispatch.php", cfg.Addr, cfg.DBName, cfg.User, cfg.Passwd, string(spec)).CombinedOutput()
	require.NoError(t, err, "php: %s", out)
	var ids []int64
	for _, f := range strings.Fields(string(out)) {
		id, err := strconv.ParseInt(f, 10, 64)
		require.NoError(t, err, "php printed %q", out)
		ids = append(ids, id)
	}
	require.Len(t, ids, len(jobs))
	return ids
}

// startWorker runs a worker whose only handler is the pool.
func startWorker(t *testing.T, c *queuety.Client, pool *phppool.Pool) *queuety.Worker {
	t.Helper()
	reg := queuety.NewRegistry()
	reg.SetFallback(pool)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}

func jobRow(t *testing.T, c *queuety.Client, id int64) *store.JobRow {
	t.Helper()
	j, err := clientstore.Of(c).GetJob(context.Background(), id)
	require.NoError(t, err)
	return j
}

func jobLogs(t *testing.T, c *queuety.Client, id int64) []store.LogRow {
	t.Helper()
	l, err := clientstore.Of(c).JobLogs(context.Background(), id)
	require.NoError(t, err)
	return l
}

func events(rows []store.LogRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Event
	}
	return out
}

func waitStatus(t *testing.T, c *queuety.Client, status string, ids ...int64) {
	t.Helper()
	waitFor(t, 20*time.Second, "jobs "+status, func() bool {
		for _, id := range ids {
			if jobRow(t, c, id).Status != status {
				return false
			}
		}
		return true
	})
}

func TestPHPDispatchedJobsRunInThePHPPool(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 2}, nil)
	var jobs []map[string]any
	for i := range 20 {
		jobs = append(jobs, map[string]any{"handler": "ok", "payload": map[string]any{"n": i}})
	}
	jobs = append(jobs,
		map[string]any{"handler": "echoes"},
		map[string]any{"handler": "GreetHandler", "payload": map[string]any{"name": "zoë"}},
		map[string]any{"handler": "DoubleStep", "payload": map[string]any{"n": 21}},
		map[string]any{"handler": "sleeps", "payload": map[string]any{"ms": 300}},
	)
	ids := phpDispatch(t, c, jobs...)
	startWorker(t, c, pool)
	waitStatus(t, c, store.StatusCompleted, ids...)

	for _, id := range ids {
		require.Equal(t, []string{"started", "completed"}, events(jobLogs(t, c, id)), "job %d", id)
		require.Equal(t, 1, jobRow(t, c, id).Attempts)
	}
	sleeper := jobRow(t, c, ids[len(ids)-1])
	require.True(t, sleeper.HeartbeatData.Valid, "PHP's Heartbeat::beat() reached the row")
	require.JSONEq(t, `{"slept":300,"of":300}`, sleeper.HeartbeatData.String)
	require.Equal(t, 0, pool.Stats().Crashes, "echoing did not break a process")
}

func TestThrowingPHPHandlerIsRetriedWithBackoffThenBuried(t *testing.T) {
	t.Parallel()
	c := newClient(t, func(cfg *queuety.Config) { cfg.Backoff = queuety.Backoff{List: []int{1}} })
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	id := phpDispatch(t, c, map[string]any{"handler": "throws", "payload": map[string]any{"message": "boom"}, "max_attempts": 2})[0]
	startWorker(t, c, pool)
	waitStatus(t, c, store.StatusBuried, id)

	row := jobRow(t, c, id)
	require.Equal(t, 2, row.Attempts)
	require.Equal(t, "boom", row.ErrorMessage.String)
	logs := jobLogs(t, c, id)
	require.Equal(t, []string{"started", "failed", "retried", "started", "buried"}, events(logs))
	for _, l := range []store.LogRow{logs[1], logs[4]} {
		require.Equal(t, "RuntimeException", l.ErrorClass.String, "get_class(\\$e)")
		require.Equal(t, "boom", l.ErrorMessage.String)
		require.True(t, strings.HasPrefix(l.ErrorTrace.String, "#0 "), "PHP's getTraceAsString(): %q", l.ErrorTrace.String)
		require.Contains(t, l.ErrorTrace.String, "{closure}")
	}
	require.GreaterOrEqual(t, logs[3].CreatedAt.Sub(logs[1].CreatedAt), time.Second, "the retry waited out its backoff")
	require.Equal(t, 1, pool.Stats().Spawns, "an exception does not cost the process")
}

func TestCrashedPHPWorkerIsReplacedAndTheJobRetried(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"exit", "segfault"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, func(cfg *queuety.Config) { cfg.Backoff = queuety.Backoff{List: []int{0}} })
			pool := startPool(t, phppool.Config{Workers: 1}, nil)
			first := pool.Stats().PIDs[0]
			id := phpDispatch(t, c, map[string]any{"handler": "crash_once", "payload": map[string]any{"how": how}})[0]
			startWorker(t, c, pool)
			waitStatus(t, c, store.StatusCompleted, id)

			require.Equal(t, 2, jobRow(t, c, id).Attempts, "attempt 2 ran in a fresh process")
			logs := jobLogs(t, c, id)
			require.Equal(t, []string{"started", "failed", "retried", "started", "completed"}, events(logs))
			require.Equal(t, phppool.ClassWorkerCrashed, logs[1].ErrorClass.String)
			want := map[string]string{"exit": "exit status 3", "segfault": "signal: segmentation fault"}[how]
			require.Equal(t, "PHP worker "+itoa(first)+" exited during the job: "+want, logs[1].ErrorMessage.String)
			st := pool.Stats()
			require.Equal(t, 1, st.Crashes)
			require.NotEqual(t, first, st.PIDs[0])
		})
	}
}

func TestPHPJobOverItsTimeLimitIsKilledAndBuried(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	id := phpDispatch(t, c, map[string]any{"handler": "sleeps", "payload": map[string]any{
		"ms": 20000, "__queuety_runtime": map[string]any{"max_attempts": 1, "timeout_seconds": 1},
	}})[0]
	startWorker(t, c, pool)
	waitStatus(t, c, store.StatusBuried, id)

	logs := jobLogs(t, c, id)
	require.Equal(t, []string{"started", "buried"}, events(logs))
	require.Equal(t, `Queuety\Exceptions\TimeoutException`, logs[1].ErrorClass.String)
	require.Equal(t, "Job exceeded maximum execution time of 1 seconds.", logs[1].ErrorMessage.String)
	waitFor(t, 5*time.Second, "a replacement process", func() bool { return pool.Stats().Spawns == 2 })
	require.Equal(t, 1, pool.Stats().Kills)
}
