package steps_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Lifecycle scenarios of Queuety's integration tests (spec §12):
// WorkflowCancellationTest, WorkflowCompensationTest (cancel),
// WorkflowDeadlineTest, WorkflowTest (pause/resume/retry),
// ForEachWorkflowTest (retry keeps successes), StaleRecoveryTest.

// recorder registers handle(state, payload) classes that record their
// public state.
type recorder struct {
	ran []string
}

func (r *recorder) add(t *testing.T, h *workflow.Handlers, name string, fail bool) {
	require.NoError(t, h.Compensation(name, func(_ context.Context, s *phpjson.Object, _ *phpjson.Object) error {
		b, _ := encodeObject(s)
		r.ran = append(r.ran, name+" "+string(b))
		if fail {
			return enginetest.Thrown(name + " failed")
		}
		return nil
	}))
}

func (env *engineEnv) logRows(workflowID int64) []store.LogRow {
	var rows []store.LogRow
	require.NoError(env.T, env.DB.Unsafe().Select(&rows, "SELECT * FROM `"+env.Store.Tables()["logs"]+"` WHERE workflow_id = ? ORDER BY id", workflowID))
	return rows
}

func TestLifecycleCancel(t *testing.T) {
	t.Parallel()

	t.Run("compensates in reverse, buries jobs, calls on_cancel", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var rec recorder
		rec.add(t, env.Engine.Handlers(), "UndoA", false)
		rec.add(t, env.Engine.Handlers(), "UndoB", false)
		rec.add(t, env.Engine.Handlers(), "OnCancelled", false)
		id := env.Dispatch(workflow.New("cancel").Then("IncStep").CompensateWith("UndoA").Then("IncStep").CompensateWith("UndoB").
			Then("IncStep").OnCancel("OnCancelled"), enginetest.Obj("n", 0))
		env.RunNext(2)
		pending := env.PendingJobs()
		require.Len(t, pending, 1)

		require.NoError(t, env.Engine.Cancel(env.Ctx(), id))
		wf := env.Workflow(id)
		require.Equal(t, "cancelled", wf.Status)
		require.True(t, wf.CompletedAt.Valid)
		require.Equal(t, []string{`UndoB {"n":2}`, `UndoA {"n":1}`, `OnCancelled {"n":2}`}, rec.ran)
		jobs := env.Jobs(id)
		last := jobs[len(jobs)-1]
		require.Equal(t, store.StatusBuried, last.Status)
		require.Equal(t, "Workflow cancelled", last.ErrorMessage.String)
		cause, done := env.State(id).Compensated()
		require.True(t, done)
		require.Equal(t, "cancel", cause)
		logs := env.logRows(id)
		l := logs[len(logs)-1]
		require.Equal(t, "workflow_cancelled", l.Event)
		require.Equal(t, "cancel", l.Handler)
		require.Equal(t, "default", l.Queue)
		require.False(t, l.JobID.Valid)

		err := env.Engine.Cancel(env.Ctx(), id)
		require.True(t, workflow.IsLifecycleError(err))
		require.EqualError(t, err, "Workflow "+itoa(int(id))+" is already cancelled.")
		require.Len(t, rec.ran, 3, "nothing runs twice")
	})

	t.Run("completed workflows cannot be cancelled; paused ones can", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		done := env.Dispatch(workflow.New("done").Then("IncStep"), enginetest.Obj("n", 0))
		env.Drain(3)
		require.EqualError(t, env.Engine.Cancel(env.Ctx(), done), "Workflow "+itoa(int(done))+" is already completed.")

		paused := env.Dispatch(workflow.New("paused").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
		changed, err := env.Engine.Pause(env.Ctx(), paused)
		require.NoError(t, err)
		require.True(t, changed)
		require.NoError(t, env.Engine.Cancel(env.Ctx(), paused))
		require.Equal(t, "cancelled", env.Workflow(paused).Status)

		require.ErrorIs(t, env.Engine.Cancel(env.Ctx(), 987654), store.ErrWorkflowNotFound)
	})

	t.Run("a failing on_cancel handler is logged as debug", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var rec recorder
		rec.add(t, env.Engine.Handlers(), "BadCancel", true)
		id := env.Dispatch(workflow.New("bad").Then("IncStep").OnCancel("BadCancel"), enginetest.Obj("n", 0))
		require.NoError(t, env.Engine.Cancel(env.Ctx(), id))
		logs := env.logRows(id)
		l := logs[len(logs)-1]
		require.Equal(t, "debug", l.Event)
		require.Equal(t, "BadCancel", l.Handler)
		require.Equal(t, "BadCancel failed", l.ErrorMessage.String)
		require.Equal(t, `{"type":"cancel_handler_failed"}`, l.Context.String)
	})
}

func TestLifecyclePauseResume(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("pr").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	env.RunNext(1)

	changed, err := env.Engine.Pause(env.Ctx(), id)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "paused", env.Workflow(id).Status)
	// The step already enqueued still runs; the next one is not enqueued.
	env.RunNext(1)
	require.Empty(t, env.PendingJobs())
	wf := env.Workflow(id)
	require.Equal(t, "paused", wf.Status)
	require.Equal(t, 2, wf.CurrentStep)

	changed, err = env.Engine.Pause(env.Ctx(), id) // not running: no change, still logged (PHP)
	require.NoError(t, err)
	require.False(t, changed)

	require.NoError(t, env.Engine.Resume(env.Ctx(), id))
	require.Equal(t, "running", env.Workflow(id).Status)
	require.Len(t, env.PendingJobs(), 1)
	err = env.Engine.Resume(env.Ctx(), id)
	require.True(t, workflow.IsLifecycleError(err))
	require.EqualError(t, err, "Workflow "+itoa(int(id))+" is not paused.")

	env.Drain(3)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":3}`, env.PublicJSON(id))
	events := env.LogEvents(id)
	require.Contains(t, events, "workflow_paused")
	require.Contains(t, events, "workflow_resumed")
	for _, l := range env.logRows(id) {
		if l.Event == "workflow_paused" || l.Event == "workflow_resumed" {
			require.Equal(t, "", l.Handler)
		}
	}
	_, err = env.Engine.Pause(env.Ctx(), 987654)
	require.ErrorIs(t, err, store.ErrWorkflowNotFound)
}

func TestLifecycleRetry(t *testing.T) {
	t.Parallel()

	t.Run("re-enqueues the failed step", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var fail atomic.Bool
		fail.Store(true)
		require.NoError(t, env.Engine.Handlers().Step("Flaky", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
			if fail.Load() {
				return nil, enginetest.Thrown("flaky")
			}
			return enginetest.Obj("fixed", true), nil
		}, workflow.HandlerMetadata{MaxAttempts: 1}))
		id := env.Dispatch(workflow.New("retry").Then("IncStep").Then("Flaky").Then("IncStep").WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		err := env.Engine.Retry(env.Ctx(), id)
		require.EqualError(t, err, "Workflow "+itoa(int(id))+" is not in failed state.")
		env.Drain(5)
		wf := env.Workflow(id)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, 1, wf.CurrentStep)

		fail.Store(false)
		require.NoError(t, env.Engine.Retry(env.Ctx(), id))
		wf = env.Workflow(id)
		require.Equal(t, "running", wf.Status)
		require.False(t, wf.ErrorMessage.Valid)
		require.False(t, wf.FailedAt.Valid)
		pending := env.PendingJobs()
		require.Len(t, pending, 1)
		jobs := env.Jobs(id)
		require.Equal(t, "Flaky", jobs[len(jobs)-1].Handler)
		env.Drain(5)
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, `{"n":2,"fixed":true}`, env.PublicJSON(id))
		require.ErrorIs(t, env.Engine.Retry(env.Ctx(), 987654), store.ErrWorkflowNotFound)
	})

	t.Run("refused once compensated", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var rec recorder
		rec.add(t, env.Engine.Handlers(), "Undo", false)
		id := env.Dispatch(workflow.New("comp").Then("IncStep").CompensateWith("Undo").Then("FailingStep").CompensateOnFailure().
			WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		env.Drain(5)
		require.Equal(t, "failed", env.Workflow(id).Status)
		err := env.Engine.Retry(env.Ctx(), id)
		require.True(t, workflow.IsLifecycleError(err))
		require.EqualError(t, err, "Workflow "+itoa(int(id))+" has already been compensated and cannot be retried.")
	})

	t.Run("for_each keeps its successes", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var fail atomic.Bool
		fail.Store(true)
		var runs atomic.Int64
		require.NoError(t, env.Engine.Handlers().Item("FlakyItem", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
			runs.Add(1)
			s, _ := item.AsString()
			if s == "bad" && fail.Load() {
				return nil, enginetest.Thrown("bad item")
			}
			return enginetest.Obj("item", s), nil
		}, workflow.HandlerMetadata{MaxAttempts: 1}))
		id := env.Dispatch(workflow.New("fe").ForEach("items", "FlakyItem").Then("IncStep").WithHandlerMetadata(env.Engine.Handlers()),
			enginetest.Obj("items", []any{"a", "bad", "c"}, "n", 0))
		env.RunNext(1) // placeholder: three branches
		jobs := env.Jobs(id)
		require.Len(t, jobs, 4)
		require.NoError(t, env.RunJob(jobs[1].ID)) // a succeeds
		require.Error(t, env.RunJob(jobs[2].ID))   // bad fails: mode all fails the workflow
		require.Equal(t, "failed", env.Workflow(id).Status)
		require.Equal(t, store.StatusBuried, env.Jobs(id)[3].Status)

		fail.Store(false)
		require.NoError(t, env.Engine.Retry(env.Ctx(), id))
		rt, ok := env.State(id).ForEachRuntime(0)
		require.True(t, ok)
		require.Empty(t, rt.Failures)
		require.Len(t, rt.Results, 1)
		env.Drain(10)
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, int64(2+2), runs.Load(), "a ran once; bad and c ran again")
		agg, _ := env.State(id).Get("0_results")
		ao, _ := agg.AsObject()
		succeeded, _ := ao.Get("succeeded")
		require.Equal(t, int64(3), enginetest.IntOf(succeeded))
	})

	t.Run("parallel re-enqueues every branch", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("par").Parallel("BranchA", "FailingStep").Then("IncStep").WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		env.Drain(5)
		require.Equal(t, "failed", env.Workflow(id).Status)
		require.NoError(t, env.Engine.Retry(env.Ctx(), id))
		var handlers []string
		for _, j := range env.Jobs(id) {
			if j.Status == store.StatusPending {
				handlers = append(handlers, j.Handler)
			}
		}
		require.Equal(t, []string{"BranchA", "FailingStep"}, handlers)
	})
}

func TestLifecycleDeadlines(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	var rec recorder
	rec.add(t, env.Engine.Handlers(), "OnLate", false)
	rec.add(t, env.Engine.Handlers(), "Undo", false)
	wfTable := "`" + env.Store.Tables()["workflows"] + "`"
	overdue := func(id int64) {
		_, err := env.DB.Exec("UPDATE "+wfTable+" SET deadline_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", id)
		require.NoError(t, err)
	}

	late := env.Dispatch(workflow.New("late").Then("IncStep").Then("IncStep").MustCompleteWithin(time.Hour).OnDeadline("OnLate"), enginetest.Obj("n", 0))
	require.True(t, env.Workflow(late).DeadlineAt.Valid)
	env.RunNext(1)
	overdue(late)
	lateComp := env.Dispatch(workflow.New("late-comp").Then("IncStep").CompensateWith("Undo").Then("IncStep").
		MustCompleteWithin(time.Hour).CompensateOnFailure(), enginetest.Obj("n", 0))
	env.RunJob(env.Jobs(lateComp)[0].ID)
	overdue(lateComp)
	notDue := env.Dispatch(workflow.New("not-due").Then("IncStep").MustCompleteWithin(time.Hour), enginetest.Obj("n", 0))
	done := env.Dispatch(workflow.New("done").Then("IncStep").MustCompleteWithin(time.Hour), enginetest.Obj("n", 0))
	env.RunJob(env.Jobs(done)[0].ID)
	overdue(done)
	paused := env.Dispatch(workflow.New("paused").Then("IncStep").MustCompleteWithin(time.Hour), enginetest.Obj("n", 0))
	_, err := env.Engine.Pause(env.Ctx(), paused)
	require.NoError(t, err)
	overdue(paused)

	n, err := env.Engine.CheckDeadlines(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, 2, n)

	wf := env.Workflow(late)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Deadline exceeded", wf.ErrorMessage.String)
	jobs := env.Jobs(late)
	require.Equal(t, store.StatusBuried, jobs[1].Status)
	require.Equal(t, "Deadline exceeded", jobs[1].ErrorMessage.String)
	logs := env.logRows(late)
	failed, exceeded := logs[len(logs)-2], logs[len(logs)-1]
	require.Equal(t, "workflow_failed", failed.Event)
	require.Equal(t, int64(0), failed.JobID.Int64)
	require.True(t, failed.JobID.Valid)
	require.Equal(t, "", failed.Handler)
	require.Equal(t, "workflow_deadline_exceeded", exceeded.Event)
	require.Equal(t, "late", exceeded.Handler)
	require.Equal(t, "default", exceeded.Queue)
	require.Contains(t, rec.ran, `OnLate {"n":1}`)

	cause, ok := env.State(lateComp).Compensated()
	require.True(t, ok)
	require.Equal(t, "deadline", cause)
	require.Contains(t, rec.ran, `Undo {"n":1}`)

	require.Equal(t, "running", env.Workflow(notDue).Status)
	require.Equal(t, "completed", env.Workflow(done).Status)
	require.Equal(t, "paused", env.Workflow(paused).Status)

	n, err = env.Engine.CheckDeadlines(env.Ctx())
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestLifecycleStaleSteps(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	jobsTable := "`" + env.Store.Tables()["jobs"] + "`"
	makeStale := func(id int64, attempts int) {
		_, err := env.DB.Exec("UPDATE "+jobsTable+" SET status = 'processing', reserved_at = NOW() - INTERVAL 1 HOUR, attempts = ? WHERE id = ?", attempts, id)
		require.NoError(t, err)
	}
	decideMax := func(j *store.JobRow) (bool, time.Duration) { return j.Attempts >= j.MaxAttempts, 0 }
	cutoff := func() time.Time { return time.Now().Add(-10 * time.Minute) }

	id := env.Dispatch(workflow.New("stale").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	first := env.Jobs(id)[0].ID
	makeStale(first, 1)
	retried, buried, err := env.Engine.RecoverStaleSteps(env.Ctx(), cutoff(), 100, decideMax)
	require.NoError(t, err)
	require.Equal(t, 1, retried)
	require.Zero(t, buried)
	require.Equal(t, store.StatusPending, env.Jobs(id)[0].Status)
	require.Equal(t, "running", env.Workflow(id).Status)

	makeStale(first, 3)
	retried, buried, err = env.Engine.RecoverStaleSteps(env.Ctx(), cutoff(), 100, decideMax)
	require.NoError(t, err)
	require.Zero(t, retried)
	require.Equal(t, 1, buried)
	j := env.Jobs(id)[0]
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, store.StaleMessage, j.ErrorMessage.String)
	wf := env.Workflow(id)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, store.StaleMessage, wf.ErrorMessage.String)
	require.Equal(t, []string{"workflow_started", "retried", "buried", "workflow_failed"}, env.LogEvents(id))

	// A for_each branch is a branch failure: first_success can still settle.
	fe := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep", workflow.ForEachFirstSuccess).Then("IncStep"), enginetest.Obj("items", []any{"a", "b"}, "n", 0))
	env.RunNext(1)
	branches := env.Jobs(fe)[1:]
	makeStale(branches[0].ID, 1)
	_, buried, err = env.Engine.RecoverStaleSteps(env.Ctx(), cutoff(), 100, func(*store.JobRow) (bool, time.Duration) { return true, 0 })
	require.NoError(t, err)
	require.Equal(t, 1, buried)
	require.Equal(t, "running", env.Workflow(fe).Status)
	rt, _ := env.State(fe).ForEachRuntime(0)
	require.Len(t, rt.Failures, 1)
	require.Equal(t, store.StaleMessage, rt.Failures[0].ErrorMessage)
	require.Equal(t, store.StatusBuried, env.Jobs(fe)[1].Status)
	env.Drain(5)
	require.Equal(t, "completed", env.Workflow(fe).Status)
}

// WorkflowGuardrailsTest with the lifecycle: a budget violation fails the
// workflow without retries; retry runs the step again and the guardrail
// still holds; the status shows the budget; the idempotency key of a
// cancelled workflow still returns it.
func TestLifecycleGuardrails(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	b := workflow.New("guarded").Then("IncStep").Then("IncStep").Then("IncStep").MaxTransitions(2)
	id := env.Dispatch(b, enginetest.Obj("n", 0))
	env.Drain(5)
	wf := env.Workflow(id)
	require.Equal(t, "failed", wf.Status)
	require.Contains(t, wf.ErrorMessage.String, "max_transitions")
	require.Equal(t, 2, wf.CurrentStep)
	r, err := env.Engine.WorkflowStatus(env.Ctx(), id)
	require.NoError(t, err)
	require.Equal(t, `{"max_transitions":2,"transitions":2,"cost_units":2,"started_workflows":0,"public_state_bytes":7}`, statusJSON(t, r.Budget))

	require.NoError(t, env.Engine.Retry(env.Ctx(), id))
	env.Drain(5)
	wf = env.Workflow(id)
	require.Equal(t, "failed", wf.Status, "the guardrail still holds after a retry")
	require.Equal(t, `{"n":2}`, env.PublicJSON(id))

	keyed := workflow.New("keyed").Then("IncStep").IdempotencyKey("order-7")
	first := env.Dispatch(keyed, enginetest.Obj("n", 0))
	require.NoError(t, env.Engine.Cancel(env.Ctx(), first))
	d, err := keyed.Build(enginetest.Obj("n", 0))
	require.NoError(t, err)
	again, existing, err := env.Engine.Dispatch(env.Ctx(), d)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, first, again)
	require.Equal(t, "cancelled", env.Workflow(again).Status)
}

// Cancel and deadline failures wake what waits on the workflow: an All
// wait fails when its dependency is cancelled or misses its deadline.
func TestLifecycleTerminalWakesWaiters(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	depCancelled := env.Dispatch(workflow.New("dep").Then("Unknown"), enginetest.Obj())
	depLate := env.Dispatch(workflow.New("late").Then("Unknown").MustCompleteWithin(time.Hour), enginetest.Obj())
	w1 := env.Dispatch(workflow.New("w1").WaitForWorkflow(workflow.WorkflowIDs(depCancelled)).Then("IncStep"), enginetest.Obj("n", 0))
	w2 := env.Dispatch(workflow.New("w2").WaitForWorkflow(workflow.WorkflowIDs(depLate)).Then("IncStep"), enginetest.Obj("n", 0))
	env.RunJob(env.Jobs(w1)[0].ID)
	env.RunJob(env.Jobs(w2)[0].ID)
	require.Equal(t, "waiting_for_workflows", env.Workflow(w1).Status)
	require.Equal(t, "waiting_for_workflows", env.Workflow(w2).Status)

	require.NoError(t, env.Engine.Cancel(env.Ctx(), depCancelled))
	require.Equal(t, "failed", env.Workflow(w1).Status)

	_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET deadline_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", depLate)
	require.NoError(t, err)
	n, err := env.Engine.CheckDeadlines(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "failed", env.Workflow(w2).Status)

	r, err := env.Engine.WorkflowStatus(env.Ctx(), w2)
	require.NoError(t, err)
	require.Equal(t, workflow.StatusFailed, r.Status)
}
