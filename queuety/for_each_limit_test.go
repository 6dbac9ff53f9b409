package queuety

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// TestForEachOverTheItemLimitFailsClearly (N4): a for_each step over more
// items than Config.MaxForEachItems fails its workflow at once with a
// message naming the count and the limit, plans no branch job and runs no
// item; one at the limit runs every item once and completes.
func TestForEachOverTheItemLimitFailsClearly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.MaxForEachItems = 50 })
	var runs atomic.Int64
	reg := NewRegistry()
	reg.RegisterItemStep("Item", func(context.Context, *workflow.State, phpjson.Value, int64) (*phpjson.Object, error) {
		runs.Add(1)
		return nil, nil
	})
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	over, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("over").ForEach("items", "Item"), wfObj(t, "items", items(51))))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "the workflow over the limit failed", func() bool { return workflowRow(t, c, over).Status == "failed" })
	wf := workflowRow(t, c, over)
	require.Contains(t, wf.ErrorMessage.String, "has 51 items, over this worker's limit of 50 for one for_each step (--max-for-each-items)")
	var jobs int
	require.NoError(t, c.store.DB().Get(&jobs, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ?", over))
	require.Equal(t, 1, jobs, "only the placeholder: no branch planned")
	require.Zero(t, runs.Load())
	var biggest int
	require.NoError(t, c.store.DB().Get(&biggest, "SELECT COALESCE(MAX(GREATEST(LENGTH(COALESCE(input, '')), LENGTH(COALESCE(state_before, '')), LENGTH(COALESCE(state_after, '')))), 0) FROM `"+
		c.store.Tables()["workflow_events"]+"` WHERE workflow_id = ?", over))
	require.Less(t, biggest, 100, "the refused step's events carry no copy of the items")
	var stored string
	require.NoError(t, c.store.DB().Get(&stored, "SELECT state FROM `"+c.store.Tables()["workflows"]+"` WHERE id = ?", over))
	require.Contains(t, stored, `"items":[0,1,2,`, "the workflow's own state is kept")

	at, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("at").ForEach("items", "Item"), wfObj(t, "items", items(50))))
	require.NoError(t, err)
	waitFor(t, 20*time.Second, "the workflow at the limit completed", func() bool { return workflowRow(t, c, at).Status == "completed" })
	require.EqualValues(t, 50, runs.Load(), "every item once")
}
