package queuety

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// MaxJobs: however many slots and lanes, the worker claims exactly its
// budget, runs each once, and then claims nothing more.
func TestWorkerMaxJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 8; cfg.ClaimLanes = 4; cfg.MaxJobs = 3 })
	var ran atomic.Int64
	reg := NewRegistry()
	reg.HandleFunc("count", func(context.Context, *Job) error { ran.Add(1); return nil })
	for i := 0; i < 10; i++ {
		_, err := c.Dispatch(ctx, "count", map[string]any{"i": i})
		require.NoError(t, err)
	}
	w := startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "budget spent", w.BudgetSpent)
	require.Equal(t, 3, countStatus(t, c, store.StatusCompleted))
	require.Equal(t, 7, countStatus(t, c, store.StatusPending))
	require.EqualValues(t, 3, ran.Load())
	require.EqualValues(t, 3, w.Stats().Claimed)
	require.True(t, w.Drained(), "a spent budget is drained too")
}

// Drained holds only once nothing claimable is left, including the steps
// a workflow enqueues as it goes and jobs due now; a delayed job does
// not keep it from draining.
func TestWorkerDrained(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4; cfg.Workflows = true; cfg.WorkflowChainSteps = -1 })
	reg := workflowRegistry(t)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("seq").Then("IncStep").Then("IncStep").Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := c.Dispatch(ctx, "noop", map[string]any{"i": i})
		require.NoError(t, err)
	}
	later, err := c.Dispatch(ctx, "noop", map[string]any{}, Delay(time.Hour))
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.False(t, w.Drained(), "not drained before any claim")
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	waitFor(t, 10*time.Second, "drained", w.Drained)
	require.Equal(t, "completed", workflowRow(t, c, id).Status, "every step ran before the worker was drained")
	require.Equal(t, 5+3, countStatus(t, c, store.StatusCompleted))
	require.Equal(t, store.StatusPending, jobRow(t, c, later.ID).Status)
	require.False(t, w.BudgetSpent(), "no budget")

	// New work: not drained until it is done.
	_, err = c.Dispatch(ctx, "noop", map[string]any{"late": true})
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the new job", func() bool { return countStatus(t, c, store.StatusCompleted) == 9 })
	waitFor(t, 10*time.Second, "drained again", w.Drained)
}

func TestConfigRejectsNegativeMaxJobs(t *testing.T) {
	t.Parallel()
	cfg := Config{MaxJobs: -1}
	require.ErrorContains(t, cfg.Validate(), "max jobs -1: must not be negative (0: no limit)")
}

// With a budget and several lanes on an empty queue the worker drains
// (the lanes that find the budget reserved by another's round wait), and
// a job dispatched later is still claimed, once.
func TestWorkerMaxJobsDrainsWhenEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 8; cfg.ClaimLanes = 4; cfg.MaxJobs = 1 })
	w := startWorker(t, c, fixtureRegistry())
	waitFor(t, 10*time.Second, "drained", w.Drained)
	require.False(t, w.BudgetSpent())
	for i := 0; i < 3; i++ {
		_, err := c.Dispatch(ctx, "noop", map[string]any{"i": i})
		require.NoError(t, err)
	}
	waitFor(t, 10*time.Second, "budget spent", w.BudgetSpent)
	require.Equal(t, 1, countStatus(t, c, store.StatusCompleted))
	require.Equal(t, 2, countStatus(t, c, store.StatusPending))
	require.True(t, w.Drained())
}

// A claim skips rows another transaction holds for a moment (SKIP
// LOCKED), so Drained asks for two empty rounds in a row with no job
// finished between, and kicks the lanes for the second; a round that
// deferred rows for their PHP class's settings is never an empty one.
func TestDrainedNeedsTwoEmptyRounds(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1 })
	reg := NewRegistry()
	reg.HandleFunc("noop", func(context.Context, *Job) error { return nil })
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	l := w.claim.lanes[0]
	round := func(got int, deferred bool) {
		want, gen, spent := w.claim.beginRound(l, 1)
		require.Equal(t, 1, want)
		require.False(t, spent)
		w.claim.giveBack(want, got)
		w.claim.endRound(l, gen, got, deferred, nil)
	}
	require.False(t, w.Drained(), "no round yet")

	round(0, true)
	require.False(t, w.Drained(), "rows waited for their class's settings")
	round(0, false)
	require.False(t, w.Drained(), "one empty round")
	select {
	case <-l.kick:
	default:
		t.Fatal("the lane was not kicked for its second look")
	}
	round(0, false)
	require.True(t, w.Drained(), "two empty rounds in a row")

	w.claim.noteFinished() // a job left: the rounds before it do not count
	require.False(t, w.Drained())
	round(0, false)
	require.False(t, w.Drained())
	round(0, true)
	round(0, false)
	require.False(t, w.Drained(), "a deferring round breaks the streak")
	round(0, false)
	require.True(t, w.Drained())
}
