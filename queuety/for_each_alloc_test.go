package queuety

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// TestForEachPlanDecodesTheStateOnce (N4) bounds the bytes a worker
// allocates to plan a for_each over 100,000 items up to its first page of branch jobs: the
// state is decoded when the job is claimed, and the transaction that
// locks the unchanged row to plan the first page reuses that decode instead of a second one
// (each is about five times the items' 6.4 MB of values).
// Not parallel: it reads the process's allocation counter, and parallel
// tests wait until it is done.
func TestForEachPlanDecodesTheStateOnce(t *testing.T) {
	const n = 100_000
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.ForEachPageSize = 10; cfg.MaxForEachItems = -1 })
	reg := NewRegistry()
	reg.RegisterItemStep("Item", (&itemRecorder{runs: map[int64]int{}}).handle)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("large").ForEach("items", "Item"), wfObj(t, "items", countItems(n))))
	require.NoError(t, err)
	db, tables := c.store.DB(), c.store.Tables()
	var placeholder int64
	require.NoError(t, db.Get(&placeholder, "SELECT id FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = ?", id, workflow.HandlerForEach))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	startWorker(t, c, reg)
	waitFor(t, 60*time.Second, "the first page was planned", func() bool {
		var branches int
		require.NoError(t, db.Get(&branches, "SELECT COUNT(*) FROM `"+tables["jobs"]+"` WHERE workflow_id = ? AND handler = 'Item'", id))
		return branches > 0
	})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("planning %d items allocated %d MB", n, allocated>>20)
	require.Less(t, allocated, uint64(82)<<20, "a second decode of the state (about 99 MB in all before it was reused)")
}
