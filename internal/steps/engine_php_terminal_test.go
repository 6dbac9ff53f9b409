package steps_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Without a PHP pool, terminal handling that calls PHP classes is never
// marked done: cancel refuses, the deadline check leaves the workflow to
// PHP workers, and a failure runs what Go can and leaves _compensated
// unset.
func TestTerminalHandlingLeftToPHP(t *testing.T) {
	t.Parallel()

	t.Run("cancel refuses and changes nothing", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var rec recorder
		rec.add(t, env.Engine.Handlers(), "GoUndo", false)
		id := env.Dispatch(workflow.New("c").Then("IncStep").CompensateWith("GoUndo").Then("IncStep").CompensateWith(`App\PhpUndo`).
			Then("IncStep").OnCancel(`App\PhpOnCancel`), enginetest.Obj("n", 0))
		env.RunNext(2)
		before := env.Jobs(id)

		err := env.Engine.Cancel(env.Ctx(), id)
		require.ErrorIs(t, err, workflow.ErrNeedsPHP)
		require.EqualError(t, err, "Workflow "+itoa(int(id))+`: its cancel handling calls PHP classes this process cannot run (App\PhpUndo, App\PhpOnCancel); cancel it from PHP (Queuety::cancel_workflow) or through a daemon with --php.`)
		require.Equal(t, "running", env.Workflow(id).Status)
		require.Equal(t, before, env.Jobs(id))
		_, done := env.State(id).Compensated()
		require.False(t, done)
		require.Empty(t, rec.ran, "not even the Go compensation: the cancel did not happen")
	})

	t.Run("deadline check leaves it to PHP, logged once", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("late").Then("IncStep").Then("IncStep").MustCompleteWithin(time.Hour).OnDeadline(`App\PhpLate`), enginetest.Obj("n", 0))
		env.RunNext(1)
		_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET deadline_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", id)
		require.NoError(t, err)
		for range 2 {
			n, err := env.Engine.CheckDeadlines(env.Ctx())
			require.NoError(t, err)
			require.Zero(t, n)
		}
		require.Equal(t, "running", env.Workflow(id).Status)
		var debug []store.LogRow
		for _, l := range env.logRows(id) {
			if l.Event == "debug" {
				debug = append(debug, l)
			}
		}
		require.Len(t, debug, 1)
		require.Equal(t, `{"type":"left_to_php","reason":"deadline","classes":["App\\PhpLate"]}`, debug[0].Context.String)
	})

	t.Run("a failure runs the Go compensations and is not marked compensated", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		var rec recorder
		rec.add(t, env.Engine.Handlers(), "GoUndo", false)
		id := env.Dispatch(workflow.New("f").Then("IncStep").CompensateWith(`App\PhpUndo`).Then("IncStep").CompensateWith("GoUndo").
			Then("FailingStep").CompensateOnFailure().WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		env.Drain(6)
		require.Equal(t, "failed", env.Workflow(id).Status)
		require.Equal(t, []string{`GoUndo {"n":2}`}, rec.ran)
		_, done := env.State(id).Compensated()
		require.False(t, done, "_compensated is not written: App\\PhpUndo never ran")
		logs := env.logRows(id)
		last := logs[len(logs)-1]
		require.Equal(t, "debug", last.Event)
		require.Equal(t, `{"type":"left_to_php","reason":"failure","classes":["App\\PhpUndo"]}`, last.Context.String)
		require.NoError(t, env.Engine.Retry(env.Ctx(), id), "retry stays possible")
	})

	t.Run("the stale sweep leaves a dead step whose burial needs PHP", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("s").Then("IncStep").CompensateWith(`App\PhpUndo`).Then("IncStep").CompensateOnFailure(), enginetest.Obj("n", 0))
		env.RunNext(1)
		second := env.Jobs(id)[1].ID
		_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["jobs"]+"` SET status = 'processing', reserved_at = NOW() - INTERVAL 1 HOUR, attempts = 3 WHERE id = ?", second)
		require.NoError(t, err)
		retried, buried, err := env.Engine.RecoverStaleSteps(env.Ctx(), time.Now().Add(-10*time.Minute), 100,
			func(j *store.JobRow) (bool, time.Duration) { return j.Attempts >= j.MaxAttempts, 0 })
		require.NoError(t, err)
		require.Zero(t, retried)
		require.Zero(t, buried)
		require.Equal(t, store.StatusProcessing, env.Jobs(id)[1].Status, "left for PHP's recover_stale")
		require.Equal(t, "running", env.Workflow(id).Status)
		logs := env.logRows(id)
		require.Equal(t, `{"type":"left_to_php","reason":"stale","classes":["App\\PhpUndo"]}`, logs[len(logs)-1].Context.String)
	})
}

// callableStub is a CallableRunner (what the PHP pool is to the engine)
// recording the compensations it is asked to run.
type callableStub struct{ ran []string }

func (s *callableStub) HandleStep(context.Context, *store.JobRow, []byte) ([]byte, error) {
	return nil, errors.New("not a step runner")
}

func (s *callableStub) HandleItem(context.Context, *store.JobRow, []byte, []byte, int64) ([]byte, error) {
	return nil, errors.New("not a step runner")
}

func (s *callableStub) RunReducer(context.Context, string, []byte, []byte, []byte) ([]byte, error) {
	return nil, errors.New("no reducer")
}

func (s *callableStub) RunCondition(context.Context, string, []byte, []byte) (bool, error) {
	return false, errors.New("no condition")
}

func (s *callableStub) RunCompensation(_ context.Context, class string, state, _ []byte) error {
	s.ran = append(s.ran, class+" "+string(state))
	return nil
}

// The wf_cancel_compensation recording with ReleaseLocks a PHP class: with
// the pool as the engine's runner the cancel runs it there and the rows
// end as recorded; without one the cancel is refused and the rows stay as
// they were before it.
func TestReplayCancelCompensationPHPClass(t *testing.T) {
	t.Parallel()
	snaps := loadReplay(t, "wf_cancel_compensation.json")
	require.Len(t, snaps, 3)

	t.Run("runs in the pool", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		stub := &callableStub{}
		env.withRunner(stub)
		env.load(snaps[1])
		require.NoError(t, env.Engine.Cancel(env.Ctx(), 1))
		env.compare("after cancel_workflow", snaps[2])
		require.Equal(t, []string{`ReleaseLocks {"n":1}`}, stub.ran)
	})

	t.Run("refused without the pool", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		env.load(snaps[1])
		require.ErrorIs(t, env.Engine.Cancel(env.Ctx(), 1), workflow.ErrNeedsPHP)
		env.compare("cancel refused", snaps[1])
	})
}

// A repeat whose condition is a PHP class, without a PHP pool: the engine
// runs nothing and writes nothing but its note; the job can be released
// untouched (the attempt restored) for PHP workers.
func TestRepeatWithPHPConditionIsLeftToPHP(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("loop").Then("IncStep", workflow.Named("inc")).RepeatWhile("inc", workflow.Condition(`App\Below`)), enginetest.Obj("n", 0))
	env.RunNext(1)
	repeat := env.PendingJobs()[0]
	eventsBefore := len(env.WorkflowEvents(id))
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), repeat, "test-worker")
	require.NoError(t, err)
	require.True(t, ok)

	stepErr, err := env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, stepErr)
	require.ErrorIs(t, err, workflow.ErrNeedsPHP)
	require.EqualError(t, err, "Workflow "+itoa(int(id))+`: its repeat condition is a PHP class this process cannot run (App\Below); the step is left to PHP workers, or a daemon with --php.`)
	require.Equal(t, "running", env.Workflow(id).Status)
	require.Len(t, env.WorkflowEvents(id), eventsBefore, "no step_started or step_failed event")
	logs := env.logRows(id)
	last := logs[len(logs)-1]
	require.Equal(t, "debug", last.Event)
	require.Equal(t, `{"type":"left_to_php","reason":"repeat","classes":["App\\Below"]}`, last.Context.String)

	released, err := env.Store.ReleaseJobLater(env.Ctx(), store.Attempt{ID: repeat, Attempt: 1, WorkerID: "test-worker"}, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, released)
	j := env.Jobs(id)[1]
	require.Equal(t, store.StatusPending, j.Status)
	require.Equal(t, 0, j.Attempts, "the attempt is given back")
	require.False(t, j.ReservedAt.Valid)
	again, err := env.Store.ReleaseJobLater(env.Ctx(), store.Attempt{ID: repeat, Attempt: 1, WorkerID: "test-worker"}, time.Now())
	require.NoError(t, err)
	require.False(t, again, "only while the attempt holds the row")
}
