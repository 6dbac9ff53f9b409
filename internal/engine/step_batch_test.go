package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The batch tests force batches instead of hoping for them: every leader
// slot is marked taken, so the steps the goroutines submit queue up; once
// all of them are queued the test goroutine leads, and the queue is run in
// batches of StepBatch. Nothing depends on timing.

type runResult struct {
	job             int64
	stepErr, runErr error
}

// runBatched claims every pending job, runs them all through Run at once
// and makes them share batches.
func (env *engineEnv) runBatched() []runResult {
	env.T.Helper()
	ids := env.PendingJobs()
	require.NotEmpty(env.T, ids)
	jobs := make([]*store.JobRow, len(ids))
	for i, id := range ids {
		j, ok, err := env.Store.ClaimJobByID(env.Ctx(), id, "test-worker")
		require.NoError(env.T, err)
		require.True(env.T, ok)
		jobs[i] = j
	}
	env.Engine.HoldBatch()
	res := make([]runResult, len(jobs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := len(jobs)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stepErr, err := env.Engine.Run(env.Ctx(), j, enginetest.Decide)
			res[i] = runResult{j.ID, stepErr, err}
			mu.Lock()
			left--
			mu.Unlock()
		}()
	}
	env.Engine.LeadBatchWhenQueued(len(jobs), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return left == 0
	})
	wg.Wait()
	return res
}

// countRows counts rows of a table matching a condition.
func (env *engineEnv) countRows(table, where string, args ...any) int {
	env.T.Helper()
	var n int
	require.NoError(env.T, env.DB.Get(&n, "SELECT COUNT(*) FROM `"+env.Store.Tables()[table]+"` WHERE "+where, args...))
	return n
}

// requireSettledOnce checks a three-step IncStep workflow that ran to the
// end: n is 3, three completed jobs, and every job started, completed and
// produced its events exactly once.
func (env *engineEnv) requireSettledOnce(id int64) {
	env.T.Helper()
	wf := env.Workflow(id)
	require.Equal(env.T, string(workflow.StatusCompleted), wf.Status, "workflow %d", id)
	require.Equal(env.T, `{"n":3}`, env.PublicJSON(id))
	jobs := env.Jobs(id)
	require.Len(env.T, jobs, 3, "workflow %d", id)
	for i, j := range jobs {
		require.Equal(env.T, store.StatusCompleted, j.Status)
		require.Equal(env.T, int64(i), j.StepIndex.Int64)
	}
	require.Equal(env.T, []string{"workflow_started", "started", "completed", "started", "completed",
		"started", "completed", "workflow_completed"}, env.LogEvents(id))
	require.Equal(env.T, []string{"step_started", "step_completed", "step_started", "step_completed",
		"step_started", "step_completed"}, env.WorkflowEvents(id))
}

// Many workflows' steps settled concurrently in shared transactions each
// advance exactly once.
func TestStepBatchAdvancesEachStepOnce(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.Engine.SetStepBatch(8)
	var ids []int64
	for range 20 {
		ids = append(ids, env.Dispatch(workflow.New("batched").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0)))
	}
	for round := range 3 {
		for _, r := range env.runBatched() {
			require.NoError(t, r.runErr)
			require.NoError(t, r.stepErr, "round %d job %d", round, r.job)
		}
	}
	require.Empty(t, env.PendingJobs())
	// 20 steps a round in batches of at most 8: at least 3 batches each.
	require.GreaterOrEqual(t, env.Engine.BatchCount(), int64(9))
	require.Equal(t, int64(60), env.Engine.BatchBodies())
	for _, id := range ids {
		env.requireSettledOnce(id)
	}
}

// A body that fails inside a batch is undone alone: the others commit, and
// the failing step is retried or buried, its workflow failed, with the rows
// the single-step path writes.
func TestStepBatchFailingBodyIsolated(t *testing.T) {
	t.Parallel()
	register := func(env *engineEnv) {
		// The handler succeeds; its _next_step makes the completion
		// transaction fail before it writes (a RuntimeError, retried like
		// a handler error).
		require.NoError(t, env.Engine.Handlers().Step("BadJumpStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
			return enginetest.Obj("n", 100, "_next_step", "nowhere"), nil
		}, workflow.HandlerMetadata{MaxAttempts: 2}))
	}
	// jump fails before writing anything; budget fails after writing the
	// workflow's new state and completing the job (the next step's
	// for_each plans 3 items against a budget of 2: a ConstraintViolation,
	// buried at once), so only the savepoint undoes those writes.
	jump := func() *workflow.Builder {
		return workflow.New("jump").Then("BadJumpStep").Then("IncStep").WithHandlerMetadata(workflow.HandlerMetadataMap{"BadJumpStep": {MaxAttempts: 2}})
	}
	budget := func() *workflow.Builder {
		return workflow.New("budget").Then("PlanItems").ForEach("items", "ItemStep").MaxForEachItems(2)
	}
	seq := func() *workflow.Builder { return workflow.New("good").Then("IncStep").Then("IncStep").Then("IncStep") }

	// The single-step path, for the rows to expect.
	ref := newEngineEnv(t)
	ref.Engine.SetStepBatch(1)
	register(ref)
	refJump, refBudget := ref.Dispatch(jump(), enginetest.Obj("n", 0)), ref.Dispatch(budget(), nil)
	ref.Drain(5)

	env := newEngineEnv(t)
	env.Engine.SetStepBatch(16)
	register(env)
	var good []int64
	for range 4 {
		good = append(good, env.Dispatch(seq(), enginetest.Obj("n", 0)))
	}
	jumpID := env.Dispatch(jump(), enginetest.Obj("n", 0))
	for range 4 {
		good = append(good, env.Dispatch(seq(), enginetest.Obj("n", 0)))
	}
	budgetID := env.Dispatch(budget(), nil)
	for range 2 {
		good = append(good, env.Dispatch(seq(), enginetest.Obj("n", 0)))
	}

	// Round 1: both fail among ten good steps; jump is retried.
	jumpJob, budgetJob := env.Jobs(jumpID)[0].ID, env.Jobs(budgetID)[0].ID
	for _, r := range env.runBatched() {
		require.NoError(t, r.runErr)
		switch r.job {
		case jumpJob:
			require.ErrorContains(t, r.stepErr, "_next_step target 'nowhere' not found")
		case budgetJob:
			require.True(t, workflow.IsConstraintViolation(r.stepErr), "%v", r.stepErr)
		default:
			require.NoError(t, r.stepErr)
		}
	}
	j := env.Jobs(jumpID)
	require.Len(t, j, 1)
	require.Equal(t, store.StatusPending, j[0].Status, "retried")
	require.Equal(t, 0, env.Workflow(jumpID).CurrentStep)
	require.Equal(t, `{"n":0}`, env.PublicJSON(jumpID))
	require.Equal(t, 0, env.countRows("workflow_events", "workflow_id IN (?, ?) AND event = 'step_completed'", jumpID, budgetID))

	// Round 2: jump's second attempt fails too and is buried. Round 3: the
	// good workflows finish.
	env.runBatched()
	env.runBatched()
	require.Empty(t, env.PendingJobs())
	for _, c := range []struct{ got, want int64 }{{jumpID, refJump}, {budgetID, refBudget}} {
		require.Equal(t, string(workflow.StatusFailed), env.Workflow(c.got).Status)
		require.Equal(t, ref.Workflow(c.want).CurrentStep, env.Workflow(c.got).CurrentStep)
		require.Equal(t, ref.LogEvents(c.want), env.LogEvents(c.got))
		require.Equal(t, ref.WorkflowEvents(c.want), env.WorkflowEvents(c.got))
		require.Equal(t, ref.PublicJSON(c.want), env.PublicJSON(c.got))
		gotJobs, wantJobs := env.Jobs(c.got), ref.Jobs(c.want)
		require.Len(t, gotJobs, len(wantJobs))
		for i := range wantJobs {
			require.Equal(t, wantJobs[i].Status, gotJobs[i].Status)
			require.Equal(t, wantJobs[i].Attempts, gotJobs[i].Attempts)
		}
	}
	for _, id := range good {
		env.requireSettledOnce(id)
	}
	require.Equal(t, int64(3), env.Engine.BatchCount())
}

// A batch that hits a deadlock is rolled back as a whole and every body is
// run again on its own: each step still settles exactly once.
func TestStepBatchDeadlockRedoesEachBodyOnce(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.Engine.SetStepBatch(32)
	var ids []int64
	for range 12 {
		ids = append(ids, env.Dispatch(workflow.New("dl").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0)))
	}
	// Twelve steps a round, one batch each. The 7th body of round 1 (after
	// six bodies wrote their rows in the transaction) and the last body of
	// round 2 report a deadlock; the redone bodies run outside the hook.
	var mu sync.Mutex
	calls := 0
	env.Engine.SetBatchBodyHook(func(int64) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 7 || calls == 7+12 {
			return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock (injected)"}
		}
		return nil
	})
	for range 3 {
		for _, r := range env.runBatched() {
			require.NoError(t, r.runErr)
			require.NoError(t, r.stepErr)
		}
	}
	require.Empty(t, env.PendingJobs())
	require.Equal(t, int64(3), env.Engine.BatchCount())
	require.Equal(t, 7+12+12, calls, "round 1 stopped at its 7th body")
	for _, id := range ids {
		env.requireSettledOnce(id)
	}
}

// A body that panics inside a batch rolls the batch back; every body then
// runs on its own (here the hook does not panic again) and settles once.
func TestStepBatchPanicRedoesEachBodyOnce(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.Engine.SetStepBatch(32)
	var ids []int64
	for range 6 {
		ids = append(ids, env.Dispatch(workflow.New("p").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0)))
	}
	var mu sync.Mutex
	calls := 0
	env.Engine.SetBatchBodyHook(func(int64) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 3 {
			panic("injected")
		}
		return nil
	})
	for range 3 {
		for _, r := range env.runBatched() {
			require.NoError(t, r.runErr)
			require.NoError(t, r.stepErr)
		}
	}
	require.Empty(t, env.PendingJobs())
	for _, id := range ids {
		env.requireSettledOnce(id)
	}
}
