package queuety

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// itemRecorder is an item handler that counts its runs by item index.
type itemRecorder struct {
	mu   sync.Mutex
	runs map[int64]int
}

func (r *itemRecorder) handle(_ context.Context, _ *workflow.State, _ phpjson.Value, index int64) (*phpjson.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[index]++
	return phpjson.NewObject().Set("seen", phpjson.Int(index)), nil
}

func (r *itemRecorder) snapshot() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int64]int, len(r.runs))
	for k, v := range r.runs {
		out[k] = v
	}
	return out
}

func countItems(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestForEachPlansInPages (N4): a for_each step over more items than the
// page size inserts its branches a page per transaction: every item runs
// exactly once, the step's aggregate counts them all, the placeholder is
// completed (and logged so) once, and the plan's cursor row is gone.
func TestForEachPlansInPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.ForEachPageSize = 3 })
	rec := &itemRecorder{runs: map[int64]int{}}
	reg := NewRegistry()
	reg.RegisterItemStep("Item", rec.handle)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("paged").ForEach("items", "Item"), wfObj(t, "items", countItems(10))))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "the workflow completed", func() bool { return workflowRow(t, c, id).Status == "completed" })

	runs := rec.snapshot()
	require.Len(t, runs, 10)
	for i := range int64(10) {
		require.Equal(t, 1, runs[i], "item %d", i)
	}
	db, tables := c.store.DB(), c.store.Tables()
	var branches, placeholderDone, plans int
	require.NoError(t, db.Get(&branches, "SELECT COUNT(*) FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = 'Item'", id))
	require.Equal(t, 10, branches, "one branch job per item")
	require.NoError(t, db.Get(&placeholderDone, "SELECT COUNT(*) FROM `"+tables["logs"]+"` WHERE workflow_id = ? AND handler = ? AND event = 'completed'", id, workflow.HandlerForEach))
	require.Equal(t, 1, placeholderDone, "the placeholder is logged completed once, by its last page")
	require.NoError(t, db.Get(&plans, "SELECT COUNT(*) FROM `"+tables["for_each_plans"]+"`"))
	require.Zero(t, plans, "the cursor row goes with the last page")
	var state string
	require.NoError(t, db.Get(&state, "SELECT state FROM `"+tables["workflows"]+"` WHERE id = ?", id))
	require.Contains(t, state, `"total":10,"succeeded":10,"failed":0`)
}

// TestForEachPlanResumesAtItsCursor (N4): a placeholder run again after
// its worker died mid-plan (the stale sweep handed it back; its cursor
// row says items 0-3 have their branch jobs) inserts branch jobs only
// for the items from the cursor on, none for those before it, and drops
// the cursor when done.
func TestForEachPlanResumesAtItsCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.ForEachPageSize = 2 })
	rec := &itemRecorder{runs: map[int64]int{}}
	reg := NewRegistry()
	reg.RegisterItemStep("Item", rec.handle)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("resumed").ForEach("items", "Item"), wfObj(t, "items", countItems(10))))
	require.NoError(t, err)
	db, tables := c.store.DB(), c.store.Tables()
	var placeholder int64
	require.NoError(t, db.Get(&placeholder, "SELECT id FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = ?", id, workflow.HandlerForEach))
	_, err = db.Exec("INSERT INTO `"+tables["for_each_plans"]+"` (job_id, workflow_id, step_index, next_item, total_items, updated_at) VALUES (?, ?, 0, 4, 10, UTC_TIMESTAMP())", placeholder, id)
	require.NoError(t, err)

	startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "the items from the cursor on ran", func() bool { return len(rec.snapshot()) == 6 })
	waitFor(t, 20*time.Second, "the placeholder completed", func() bool {
		var status string
		require.NoError(t, db.Get(&status, "SELECT status FROM `"+tables["jobs"]+"` WHERE id = ?", placeholder))
		return status == "completed"
	})
	var indexes []int64
	require.NoError(t, db.Select(&indexes, "SELECT JSON_VALUE(payload, '$.__for_each.item_index') FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = 'Item' ORDER BY 1", id))
	require.Equal(t, []int64{4, 5, 6, 7, 8, 9}, indexes, "no branch for an item before the cursor")
	var plans int
	require.NoError(t, db.Get(&plans, "SELECT COUNT(*) FROM `"+tables["for_each_plans"]+"`"))
	require.Zero(t, plans)
	require.Equal(t, "running", workflowRow(t, c, id).Status, "items 0-3 are still owed their results")
}

// TestForEachPlanCursorGoesWhenTheWorkflowMovedOn (N4): a placeholder
// handed back mid-plan after its workflow moved past the step (here: to
// step 1) plans nothing more, completes, and its cursor row is deleted
// rather than left behind.
func TestForEachPlanCursorGoesWhenTheWorkflowMovedOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.ForEachPageSize = 2 })
	rec := &itemRecorder{runs: map[int64]int{}}
	reg := NewRegistry()
	reg.RegisterItemStep("Item", rec.handle)
	reg.RegisterStep("After", func(context.Context, *workflow.State) (*phpjson.Object, error) { return nil, nil })
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("moved").ForEach("items", "Item").Then("After"), wfObj(t, "items", countItems(10))))
	require.NoError(t, err)
	db, tables := c.store.DB(), c.store.Tables()
	var placeholder int64
	require.NoError(t, db.Get(&placeholder, "SELECT id FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = ?", id, workflow.HandlerForEach))
	_, err = db.Exec("INSERT INTO `"+tables["for_each_plans"]+"` (job_id, workflow_id, step_index, next_item, total_items, updated_at) VALUES (?, ?, 0, 4, 10, UTC_TIMESTAMP())", placeholder, id)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE `"+tables["workflows"]+"` SET current_step = 1 WHERE id = ?", id)
	require.NoError(t, err)

	startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "the placeholder completed", func() bool {
		var status string
		require.NoError(t, db.Get(&status, "SELECT status FROM `"+tables["jobs"]+"` WHERE id = ?", placeholder))
		return status == "completed"
	})
	var branches, plans int
	require.NoError(t, db.Get(&branches, "SELECT COUNT(*) FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = 'Item'", id))
	require.Zero(t, branches, "nothing planned for a step the workflow left")
	require.NoError(t, db.Get(&plans, "SELECT COUNT(*) FROM `"+tables["for_each_plans"]+"`"))
	require.Zero(t, plans, "the cursor row is not left behind")
	require.Empty(t, rec.snapshot())
}
