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
// its for_each placeholder plans 50,000 branch jobs in pages of 100 (500
// transactions) leaves whole pages and a cursor that names the first item
// without a branch; the stale sweep of the next worker hands the
// placeholder back and it plans from the cursor on, so every item ends
// with exactly one branch job: none lost, none doubled.
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
	args := []string{"--dsn", dsn, "work", "--max-for-each-items", "-1", "--for-each-page", "100", "--poll-interval", "20ms", "--stale-timeout", "2s", "--rescue-schedule", "@every 1s", "--backoff", "1"}
	branches := func() int {
		return count(t, db, "SELECT COUNT(*) FROM "+jobsTable+" WHERE workflow_id = ? AND handler = ?", id, `App\Item`)
	}

	first := startDaemon(t, args...)
	waitFor(t, 30*time.Second, "the first page planned", func() bool { return branches() > 0 })
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	_ = first.wait(t, 10*time.Second)
	afterKill := branches()
	t.Logf("branches after the kill: %d", afterKill)
	require.Less(t, afterKill, n, "the kill landed mid-plan")
	require.Zero(t, afterKill%100, "whole pages only")
	require.Equal(t, afterKill, count(t, db, "SELECT next_item FROM "+plansTable+" WHERE workflow_id = ?", id), "the cursor names the first item without a branch")

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
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM "+plansTable), "the cursor row went with the last page")
}

// plansTable holds the cursors of paged for_each plans.
const plansTable = "wp_queuety_for_each_plans"
