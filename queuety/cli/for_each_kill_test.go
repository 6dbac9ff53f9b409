package cli_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// TestForEachPlanSurvivesAKillMidInsertion (N4): a worker SIGKILLed while
// its for_each placeholder plans 50,000 branch jobs (seconds of inserts) leaves either none of
// them or all (one transaction); the stale sweep of the next worker hands
// the placeholder back and it plans the rest, so every item ends with
// exactly one branch job: none lost, none doubled.
func TestForEachPlanSurvivesAKillMidInsertion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := newDB(t)
	db := openDB(t, dsn)
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	const n = 50_000
	items := make([]phpjson.Value, n)
	for i := range items {
		items[i] = phpjson.Int(int64(i))
	}
	d, err := workflow.New("big").ForEach("items", `App\Item`).Build(phpjson.NewObject().Set("items", phpjson.List(items...)))
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	args := []string{"--dsn", dsn, "work", "--max-for-each-items", "-1", "--poll-interval", "20ms", "--stale-timeout", "2s", "--rescue-schedule", "@every 1s", "--backoff", "1"}
	branches := func() int {
		return count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ?", id, `App\Item`)
	}

	first := startDaemon(t, args...)
	waitFor(t, 30*time.Second, "the placeholder claimed", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE workflow_id = ? AND status = 'processing'", id) == 1
	})
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	_ = first.wait(t, 10*time.Second)
	afterKill := branches()
	require.Contains(t, []int{0, n}, afterKill, "all or nothing")
	t.Logf("branches after the kill: %d", afterKill)

	second := startDaemon(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("second worker:\n%s", second.stderr.String())
		}
	})
	waitFor(t, 60*time.Second, "every branch planned", func() bool { return branches() == n })
	waitFor(t, 30*time.Second, "the placeholder completed", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ? AND status = 'completed'", id, workflow.HandlerForEach) == 1
	})
	require.Equal(t, n, count(t, db, "SELECT COUNT(DISTINCT JSON_VALUE(payload, '$.__for_each.item_index')) FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ?", id, `App\Item`),
		"one branch per item")
	require.Equal(t, n, branches(), "none doubled")
}
