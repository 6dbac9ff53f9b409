package phppool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// The cron lines a site replaces `wp queuety work --once` and
// `wp queuety flush` with, over PHP handlers (testdata/cron-app.php, every
// class with config()): on a fresh pool each row waits for its class's
// settings, and a round that claimed nothing for that reason is not an
// empty queue. --once runs exactly one job, flush runs every due job,
// chain link, batch job (and its callback) and workflow step and prints
// the count, --stop-when-empty drains PHP workflows, --max-jobs takes its
// number; each handler runs once.
func TestCronLinesRunPHPJobs(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	dsn := c.Config().DSN
	ctx := context.Background()
	runs := filepath.Join(t.TempDir(), "runs")
	cmd := workerCommand(t)
	app, err := filepath.Abs("testdata/cron-app.php")
	require.NoError(t, err)
	php := fmt.Sprintf("env CRON_RUNS='%s' %s '%s' --bootstrap '%s'", runs, cmd[0], cmd[1], app)
	cron := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(append(append([]string{}, args...), "--dsn", dsn, "--php", php, "--php-workers", "1")...)
		require.Equal(t, cli.ExitOK, code, stderr)
		return stdout
	}
	ran := func() map[string]int {
		t.Helper()
		b, err := os.ReadFile(runs)
		if os.IsNotExist(err) {
			return map[string]int{}
		}
		require.NoError(t, err)
		out := map[string]int{}
		for _, line := range strings.Fields(string(b)) {
			out[line]++
		}
		return out
	}
	total := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	var want []string
	job := func(k string, opts ...queuety.DispatchOption) int64 {
		d, err := c.Dispatch(ctx, "CronJob", map[string]any{"k": k}, opts...)
		require.NoError(t, err)
		want = append(want, "CronJob:"+k)
		return d.ID
	}
	// The plain jobs come from PHP (the bridge's dispatch), the others
	// from Go: the same rows.
	var fromPHP []map[string]any
	for i := range 8 {
		k := fmt.Sprintf("plain%d", i)
		fromPHP = append(fromPHP, map[string]any{"handler": "CronJob", "payload": map[string]any{"k": k}})
		want = append(want, "CronJob:"+k)
	}
	phpDispatch(t, c, fromPHP...)
	link := job("chain0")
	for i := 1; i < 3; i++ {
		link = job(fmt.Sprintf("chain%d", i), queuety.After(link))
	}
	var batchJobs []queuety.BatchJob
	for i := range 3 {
		batchJobs = append(batchJobs, queuety.BatchJob{Handler: "CronJob", Payload: map[string]any{"k": fmt.Sprintf("batch%d", i)}})
		want = append(want, fmt.Sprintf("CronJob:batch%d", i))
	}
	batch, _, err := c.DispatchBatch(ctx, queuety.BatchSpec{Then: "CronBatchThen"}, batchJobs)
	require.NoError(t, err)
	want = append(want, fmt.Sprintf("CronBatchThen:%d", batch))
	three := workflow.New("cron").Then("CronStepA").Then("CronStepB").Then("CronStepC")
	var wfs []int64
	for i := range 3 {
		wfs = append(wfs, dispatchWorkflow(t, c, three, fmt.Sprintf(`{"wf":"w%d"}`, i)))
		for _, s := range []string{"A", "B", "C"} {
			want = append(want, fmt.Sprintf("CronStep%s:w%d", s, i))
		}
	}
	const jobs = 8 + 3 + 3 + 9

	// work --once: one job, and one again in the next run (a fresh pool
	// each time).
	require.Contains(t, cron("work", "--once"), "Worker stopped (max-jobs): 1 jobs (1 completed, 0 retried, 0 buried).")
	require.Equal(t, map[string]int{"CronJob:plain0": 1}, ran())
	require.Contains(t, cron("work", "--once"), "Worker stopped (max-jobs): 1 jobs (1 completed")
	require.Equal(t, 2, total(ran()))

	// flush: everything else that is due, counted.
	require.Equal(t, fmt.Sprintf("Flushed %d jobs.\n", jobs-2), cron("flush"))
	got := ran()
	sort.Strings(want)
	var keys []string
	for k, n := range got {
		require.Equal(t, 1, n, "%s ran %d times", k, n)
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, want, keys)
	for _, id := range wfs {
		st, err := c.WorkflowStatus(ctx, id)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusCompleted, st.Status)
	}
	var pending int
	require.NoError(t, clientstore.Of(c).DB().Get(&pending, "SELECT COUNT(*) FROM `"+clientstore.Of(c).Tables()["jobs"]+"` WHERE status <> 'completed'"))
	require.Zero(t, pending)

	// work --stop-when-empty drains PHP workflows, every step once.
	before := total(ran())
	for i := range 3 {
		wfs = append(wfs, dispatchWorkflow(t, c, three, fmt.Sprintf(`{"wf":"v%d"}`, i)))
	}
	// What was left to run, for the failure message.
	var left []string
	require.NoError(t, clientstore.Of(c).DB().Select(&left, "SELECT CONCAT(id, ' ', handler, ' ', status, ' ', available_at) FROM `"+
		clientstore.Of(c).Tables()["jobs"]+"` WHERE status <> 'completed'"))
	require.Contains(t, cron("work", "--stop-when-empty", "--max-time", "5m"), "Worker stopped (empty): 9 jobs (9 completed, 0 retried, 0 buried).", "left: %v", left)
	got = ran()
	require.Equal(t, before+9, total(got))
	for i := range 3 {
		for _, s := range []string{"A", "B", "C"} {
			require.Equal(t, 1, got[fmt.Sprintf("CronStep%s:v%d", s, i)])
		}
	}

	// --max-jobs takes its number of PHP jobs, no more.
	for i := range 4 {
		job(fmt.Sprintf("max%d", i))
	}
	require.Contains(t, cron("work", "--max-jobs", "3"), "Worker stopped (max-jobs): 3 jobs (3 completed")
	got = ran()
	require.Equal(t, before+9+3, total(got))
	require.Equal(t, "Flushed 1 jobs.\n", cron("flush"))
	require.Equal(t, before+9+4, total(ran()))
}
