package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// localEnv is an engine env whose engine runs local activities for the
// worker "test-worker" (the id runJob claims with), counting claims.
type localEnv struct {
	*engineEnv
	claims atomic.Int64
}

func newLocalEnv(t *testing.T) *localEnv {
	env := &localEnv{engineEnv: newEngineEnv(t)}
	env.Engine.SetLocalRuntime("test-worker", time.Minute, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	return env
}

func (env *localEnv) step(t *testing.T, class string, fn workflow.StepFunc) {
	require.NoError(t, env.Engine.Handlers().Step(class, fn, workflow.HandlerMetadata{}))
}

// claimAndRun claims the next pending job through the ordinary claim and
// runs it (counted: the test proves which steps needed a claim).
func (env *localEnv) claimAndRun() {
	env.T.Helper()
	ids := env.PendingJobs()
	require.NotEmpty(env.T, ids, "no pending job")
	env.claims.Add(1)
	_ = env.RunJob(ids[0])
}

func (env *localEnv) executions(wf int64) []store.ActivityExecution {
	xs, err := env.Store.ActivityExecutions(env.Ctx(), wf)
	require.NoError(env.T, err)
	return xs
}

func (env *localEnv) attempts(wf int64) []store.ActivityAttempt {
	as, err := env.Store.ActivityAttempts(env.Ctx(), wf)
	require.NoError(env.T, err)
	return as
}

type wfEvent struct {
	Event   string
	JobID   int64
	Context map[string]any
}

// localEvents lists the workflow_events of one job with decoded contexts.
func (env *localEnv) jobEvents(jobID int64) []wfEvent {
	var rows []struct {
		Event   string  `db:"event"`
		JobID   int64   `db:"job_id"`
		Context *string `db:"context"`
	}
	require.NoError(env.T, env.DB.Select(&rows, "SELECT event, job_id, context FROM `"+env.Store.Tables()["workflow_events"]+"` WHERE job_id = ? ORDER BY id", jobID))
	out := make([]wfEvent, len(rows))
	for i, r := range rows {
		out[i] = wfEvent{Event: r.Event, JobID: r.JobID}
		if r.Context != nil {
			require.NoError(env.T, json.Unmarshal([]byte(*r.Context), &out[i].Context))
		}
	}
	return out
}

func (env *localEnv) jobLogs(jobID int64) []string {
	var ev []string
	require.NoError(env.T, env.DB.Select(&ev, "SELECT event FROM `"+env.Store.Tables()["logs"]+"` WHERE job_id = ? ORDER BY id", jobID))
	return ev
}

// history lists an execution's history entries (event, payload).
func history(t *testing.T, x store.ActivityExecution) []wfEvent {
	var entries []struct {
		Event   string         `json:"event"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(x.History.String), &entries))
	out := make([]wfEvent, len(entries))
	for i, e := range entries {
		out[i] = wfEvent{Event: e.Event, JobID: x.JobID, Context: e.Payload}
	}
	return out
}

func eventNames(evs []wfEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// seedOptions are the seed's SendReceiptActivity options.
var seedOptions = workflow.LocalActivityOptions{MaxAttempts: 3, StartToCloseTimeout: 10, ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5}

// The seed's example: a local activity right after an ordinary step runs
// in the worker that committed that step, with no claim, one execution,
// the scheduled/started/heartbeat/completed events carrying the markers.
func TestLocalActivitySeedExampleRunsWithoutAClaim(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "SendReceiptActivity", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		calls.Add(1)
		require.NoError(t, engine.ActivityHeartbeat(ctx, map[string]any{"message": "Polling remote job", "job_id": "r-1"}))
		n, _ := s.Get("n")
		return enginetest.Obj("receipt", "sent for "+string(mustEncode(n))), nil
	})
	id := env.Dispatch(workflow.New("order").Then("IncStep").LocalActivity("SendReceiptActivity", seedOptions), enginetest.Obj("n", 0))

	env.claimAndRun() // IncStep; the local activity runs right after its commit
	require.Empty(t, env.PendingJobs(), "no job left for the queue")
	require.EqualValues(t, 1, env.claims.Load(), "only the ordinary step was claimed")
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":1,"receipt":"sent for 1"}`, env.PublicJSON(id))
	require.EqualValues(t, 1, calls.Load())

	jobs := env.Jobs(id)
	require.Len(t, jobs, 2)
	local := jobs[1]
	require.Equal(t, "SendReceiptActivity", local.Handler)
	require.Equal(t, store.StatusCompleted, local.Status)
	require.Equal(t, 1, local.Attempts, "inserted claimed, never claimed again")
	require.Equal(t, "test-worker", local.ReservedBy.String)
	require.JSONEq(t, `{"message":"Polling remote job","job_id":"r-1"}`, local.HeartbeatData.String)

	xs := env.executions(id)
	require.Len(t, xs, 1, "exactly one execution")
	x := xs[0]
	require.Equal(t, "local", x.ExecutionMode)
	require.True(t, x.QueueBypassed)
	require.Equal(t, store.ActivityCompleted, x.Status)
	require.Equal(t, 1, x.AttemptCount)
	require.Equal(t, local.ID, x.JobID)
	require.Equal(t, `{"execution_mode":"local","queue_bypassed":true,"routing":"same_process_workflow_task","max_attempts":3,"backoff":null,"start_to_close_timeout":10,"schedule_to_close_timeout":30,"heartbeat_timeout":5,"non_retryable_error_types":[]}`, x.ActivityOptions)
	require.Equal(t, `{"receipt":"sent for 1"}`, x.Result.String)
	require.True(t, x.ScheduleToCloseDeadlineAt.Valid)

	atts := env.attempts(id)
	require.Len(t, atts, 1)
	require.Equal(t, store.AttemptCompleted, atts[0].Status)
	require.Equal(t, 1, atts[0].AttemptNumber)
	require.False(t, atts[0].RetryReason.Valid)
	require.True(t, atts[0].LastHeartbeatAt.Valid)

	hist := history(t, x)
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityHeartbeatRecorded, workflow.ActivityCompleted}, eventNames(hist))
	evs := env.jobEvents(local.ID)
	require.Equal(t, []string{workflow.EventStepStarted, workflow.EventStepCompleted}, eventNames(evs), "Queuety's events for the job")
	for _, ev := range append(hist, evs...) {
		require.Equal(t, "local", ev.Context["execution_mode"], ev.Event)
		require.Equal(t, true, ev.Context["local_activity"], ev.Event)
		require.IsType(t, "", ev.Context["workflow_task_id"], ev.Event)
	}
	for _, ev := range evs { // (history entries live in the execution's own row)
		require.EqualValues(t, x.ID, ev.Context["activity_execution_id"], ev.Event)
	}
	require.Equal(t, map[string]any{"message": "Polling remote job", "job_id": "r-1"}, hist[2].Context["progress"])
	require.Equal(t, []string{"started", "completed"}, env.jobLogs(local.ID))

	// Visibility: timeline, status, export, metrics.
	tl, err := env.Engine.Timeline(env.Ctx(), id, 0, 0)
	require.NoError(t, err)
	var acts []string
	for _, ev := range tl {
		if ev.LocalActivity {
			require.Equal(t, "local", *ev.ExecutionMode)
			acts = append(acts, ev.ActivityEvent)
		}
	}
	require.Equal(t, []string{"ActivityStarted", "ActivityCompleted"}, acts)
	st, err := env.Engine.WorkflowStatus(env.Ctx(), id)
	require.NoError(t, err)
	require.Len(t, st.LocalActivities, 1)
	require.Equal(t, "local", st.LocalActivities[0].ExecutionMode)
	require.True(t, st.LocalActivities[0].LocalActivity)
	doc, err := env.Engine.Export(env.Ctx(), id)
	require.NoError(t, err)
	a, ok := doc.Get("activities")
	require.True(t, ok, "the export lists the local activities")
	b, err := phpjson.Encode(a)
	require.NoError(t, err)
	require.Contains(t, string(b), `"execution_mode":"local","local_activity":true,"queue_bypassed":true,"status":"completed"`)
	m, err := env.Engine.ActivityMetrics(env.Ctx())
	require.NoError(t, err)
	require.EqualValues(t, 1, m.Local)
	require.EqualValues(t, 0, m.LocalOpen)
	require.EqualValues(t, 1, m.LocalAttempts)
	require.EqualValues(t, 0, m.QueuedOpen)
}

// classed is an error with a PHP-style class.
type classed struct{ class, msg string }

func (e *classed) Error() string      { return e.msg }
func (e *classed) ErrorClass() string { return e.class }

func TestLocalActivityFailureThenSuccessRetriesDurably(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Flaky", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		if calls.Add(1) == 1 {
			return nil, &classed{"RuntimeException", "gateway 502"}
		}
		return enginetest.Obj("ok", true), nil
	})
	id := env.Dispatch(workflow.New("flaky").Then("IncStep").LocalActivity("Flaky", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{0}}), enginetest.Obj("n", 0))
	env.claimAndRun()
	// Attempt 1 failed: the retry is a durable pending row, not a loop.
	require.Equal(t, "running", env.Workflow(id).Status)
	pending := env.PendingJobs()
	require.Len(t, pending, 1)
	xs := env.executions(id)
	require.Equal(t, store.ActivityPending, xs[0].Status)
	require.Equal(t, engine.RetryFailure, xs[0].RetryReason.String)
	require.Equal(t, xs[0].JobID, pending[0], "the same job row is the retry task")

	env.claimAndRun() // the retry row goes through the claim, then the local path
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.EqualValues(t, 2, calls.Load())
	atts := env.attempts(id)
	require.Len(t, atts, 2)
	require.Equal(t, store.AttemptFailed, atts[0].Status)
	require.Equal(t, "gateway 502", atts[0].ErrorMessage.String)
	require.Equal(t, store.AttemptCompleted, atts[1].Status)
	require.Equal(t, engine.RetryFailure, atts[1].RetryReason.String)
	require.Len(t, env.executions(id), 1, "one execution across attempts")
	hist := history(t, env.executions(id)[0])
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityRetryScheduled, workflow.ActivityStarted, workflow.ActivityCompleted}, eventNames(hist))
	require.Equal(t, engine.RetryFailure, hist[2].Context["retry_reason"])
	require.Equal(t, engine.RetryFailure, hist[3].Context["retry_reason"])
	evs := env.jobEvents(xs[0].JobID)
	require.Equal(t, []string{workflow.EventStepStarted, workflow.EventStepFailed, workflow.EventStepStarted, workflow.EventStepCompleted}, eventNames(evs))
	require.Equal(t, workflow.ActivityRetryScheduled, evs[1].Context["activity_event"])
	require.Equal(t, []string{"started", "failed", "retried", "started", "completed"}, env.jobLogs(xs[0].JobID))
}

func TestLocalActivityTimeoutRecordsTimeoutRetry(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Slow", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // ends at the start-to-close deadline
			return nil, context.Cause(ctx)
		}
		return enginetest.Obj("ok", true), nil
	})
	id := env.Dispatch(workflow.New("slow").LocalActivity("Slow", workflow.LocalActivityOptions{MaxAttempts: 2, Backoff: []int64{0}, StartToCloseTimeout: 1}), enginetest.Obj())
	env.claimAndRun()
	env.claimAndRun()
	require.Equal(t, "completed", env.Workflow(id).Status)
	atts := env.attempts(id)
	require.Len(t, atts, 2)
	require.Equal(t, store.AttemptFailed, atts[0].Status)
	require.Equal(t, workflow.TimeoutStartToClose, atts[0].TimeoutKind.String)
	require.Contains(t, atts[0].ErrorMessage.String, "Local activity Slow start-to-close deadline expired at ")
	require.Equal(t, engine.RetryTimeout, atts[1].RetryReason.String)
}

func TestLocalActivityNonRetryableErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Charge", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		calls.Add(1)
		return nil, &classed{`App\Errors\PaymentDeclined`, "card declined"}
	})
	id := env.Dispatch(workflow.New("pay").LocalActivity("Charge", workflow.LocalActivityOptions{MaxAttempts: 5, NonRetryableErrorTypes: []string{"PaymentDeclined"}}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Equal(t, "card declined", env.Workflow(id).ErrorMessage.String)
	require.EqualValues(t, 1, calls.Load())
	require.Empty(t, env.PendingJobs())
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityFailed, x.Status)
	require.Equal(t, 1, x.AttemptCount)
	evs := history(t, x)
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityFailed}, eventNames(evs))
	require.Equal(t, true, evs[2].Context["non_retryable"])
	require.Equal(t, store.StatusBuried, env.Jobs(id)[0].Status)
	require.Equal(t, []string{"started", "buried", "workflow_failed"}, env.jobLogs(x.JobID))
}

func TestLocalActivityScheduleToCloseFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Hang", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	id := env.Dispatch(workflow.New("hang").LocalActivity("Hang", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{0}, ScheduleToCloseTimeout: 1}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.EqualValues(t, 1, calls.Load(), "never retried")
	require.Empty(t, env.PendingJobs())
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityFailed, x.Status)
	require.Equal(t, workflow.TimeoutScheduleToClose, x.TimeoutKind.String)
	require.Len(t, env.attempts(id), 1)
	evs := history(t, x)
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityTimedOut}, eventNames(evs))
	require.Equal(t, workflow.TimeoutScheduleToClose, evs[2].Context["timeout_kind"])
}

func TestLocalActivityExhaustedAttemptsFailTheStep(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "Always", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, errors.New("still broken")
	})
	id := env.Dispatch(workflow.New("x").LocalActivity("Always", workflow.LocalActivityOptions{MaxAttempts: 2, Backoff: []int64{0}}), enginetest.Obj())
	env.claimAndRun()
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Empty(t, env.PendingJobs())
	require.Len(t, env.attempts(id), 2)
	require.Equal(t, store.ActivityFailed, env.executions(id)[0].Status)
}

// Cancellation is cooperative: the heartbeat after a cancel returns
// ErrActivityCancelled and the attempt ends as cancelled.
func TestLocalActivityCancelObservedAtHeartbeat(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	var hbErr error
	env.step(t, "Poll", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		close(started)
		<-release
		hbErr = engine.ActivityHeartbeat(ctx, map[string]any{"message": "still polling"})
		return nil, hbErr
	})
	id := env.Dispatch(workflow.New("poll").LocalActivity("Poll", workflow.LocalActivityOptions{HeartbeatTimeout: 300}), enginetest.Obj())
	done := make(chan error, 1)
	job := env.PendingJobs()[0]
	go func() {
		row, _, err := env.Store.ClaimJobByID(env.Ctx(), job, "test-worker")
		if err == nil {
			_, err = env.Engine.Run(env.Ctx(), row, enginetest.Decide)
		}
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the run ended before the activity started: %v", err)
	}
	require.NoError(t, env.Engine.Cancel(env.Ctx(), id))
	close(release)
	require.NoError(t, <-done)
	require.ErrorIs(t, hbErr, workflow.ErrActivityCancelled)
	require.Equal(t, "cancelled", env.Workflow(id).Status)
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityCancelled, x.Status)
	require.Equal(t, store.AttemptCancelled, env.attempts(id)[0].Status)
	evs := history(t, x)
	require.Equal(t, workflow.ActivityCancelled, evs[len(evs)-1].Event)
}

// A chain of local steps after one claim runs entirely in process, and a
// first step that is local (no advancing worker) goes through the claim.
func TestLocalActivityChainAndFirstStep(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	b := workflow.New("chain")
	for i := 0; i < 5; i++ {
		b.LocalActivity("IncStep", workflow.LocalActivityOptions{})
	}
	id := env.Dispatch(b, enginetest.Obj("n", 0))
	env.claimAndRun()
	require.EqualValues(t, 1, env.claims.Load())
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":5}`, env.PublicJSON(id))
	require.Len(t, env.executions(id), 5)
	for _, j := range env.Jobs(id) {
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, store.StatusCompleted, j.Status)
	}
}

// Without a local runtime (a dispatching client, a signal) the step is a
// pending row; the claim runs it on the same local path.
func TestLocalActivityWithoutRuntimeGoesThroughTheClaim(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.Engine.DropLocalRuntime()
	id := env.Dispatch(workflow.New("q").Then("IncStep").LocalActivity("IncStep", workflow.LocalActivityOptions{}), enginetest.Obj("n", 0))
	env.claimAndRun()
	require.Len(t, env.PendingJobs(), 1)
	env.claimAndRun()
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Len(t, env.executions(id), 1)
	require.Equal(t, store.ActivityCompleted, env.executions(id)[0].Status)
}

// A claimed job reaches the local runtime only through its step's kind;
// when the step current under the lock is not a local activity's (here a
// single step's job handed there), the runtime refuses it before writing
// anything.
func TestLocalRuntimeRefusesAJobOfAnotherStep(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	id := env.Dispatch(workflow.New("q").Then("IncStep"), enginetest.Obj("n", 0))
	jobID := env.PendingJobs()[0]
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), jobID, "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	err = env.Engine.RunLocalClaimed(env.Ctx(), job)
	require.ErrorContains(t, err, "is not the job of a local activity step.")
	require.Empty(t, env.executions(id))
	require.Equal(t, 0, env.Workflow(id).CurrentStep)
}

func TestLocalActivityRejectsRoutingOptions(t *testing.T) {
	t.Parallel()
	const msg = "Local activities do not accept connection, queue, worker session, or schedule-to-start routing options."
	for name, o := range map[string]workflow.LocalActivityOptions{
		"queue": {Queue: "imports"}, "connection": {Connection: "redis"},
		"worker_session": {WorkerSession: "gpu-render"}, "schedule_to_start": {ScheduleToStartTimeout: 5},
	} {
		_, err := workflow.New("x").LocalActivity("A", o).Build(nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), msg, name)
	}
	_, err := workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{MaxAttempts: -1}).Build(nil)
	require.Error(t, err)
	_, err = workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{NonRetryableErrorTypes: []string{"X", "X"}}).Build(nil)
	require.Error(t, err)
	// Blank as PHP's trim() sees it: NUL is, \f is not.
	_, err = workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{NonRetryableErrorTypes: []string{"\x00 "}}).Build(nil)
	require.ErrorContains(t, err, "non_retryable_error_types entry 0 must be a non-empty string")
	_, err = workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{NonRetryableErrorTypes: []string{"\f"}}).Build(nil)
	require.NoError(t, err)

	// Dispatch time: a definition written elsewhere with a queue on the step.
	d, err := workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{}).Build(nil)
	require.NoError(t, err)
	require.NoError(t, workflow.CheckLocalActivities(d))
	st, err := workflow.ParseState(d.Workflow.State)
	require.NoError(t, err)
	steps := st.Steps()
	steps[0].Object().Set("queue", phpjson.String("imports"))
	d.Workflow.State, err = st.Encode()
	require.NoError(t, err)
	require.ErrorIs(t, workflow.CheckLocalActivities(d), workflow.ErrLocalActivityRouting)

	// Run time: the engine fails such a step with the message.
	env := newLocalEnv(t)
	id, _, err := env.Engine.Dispatch(env.Ctx(), d)
	require.NoError(t, err)
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Equal(t, msg, env.Workflow(id).ErrorMessage.String)
}

func TestLocalActivityStepDefinition(t *testing.T) {
	t.Parallel()
	d, err := workflow.New("x").LocalActivity("SendReceiptActivity", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{1, 2}}, workflow.Named("receipt")).Build(nil)
	require.NoError(t, err)
	st, err := workflow.ParseState(d.Workflow.State)
	require.NoError(t, err)
	step := st.Steps()[0]
	require.Equal(t, workflow.StepLocalActivity, step.Type())
	b, err := phpjson.Encode(step.Value())
	require.NoError(t, err)
	require.Equal(t, `{"type":"local_activity","name":"receipt","class":"SendReceiptActivity","local_activity":{"execution_mode":"local","queue_bypassed":true,"routing":"same_process_workflow_task","max_attempts":3,"backoff":[1,2],"start_to_close_timeout":null,"schedule_to_close_timeout":null,"heartbeat_timeout":null,"non_retryable_error_types":[]}}`, string(b))
	def, err := step.Definition()
	require.NoError(t, err)
	la, ok := def.(*workflow.LocalActivityStep)
	require.True(t, ok)
	require.Equal(t, "SendReceiptActivity", la.Class)
	// The first job: on the run's queue, the job's own attempts out of the
	// way of the execution's.
	require.Len(t, d.Jobs, 1)
	require.Equal(t, "SendReceiptActivity", d.Jobs[0].Handler)
	require.EqualValues(t, 255, d.Jobs[0].MaxAttempts)
	require.Equal(t, `{"__queuety_runtime":{"max_attempts":255}}`, string(d.Jobs[0].Payload))
	p, err := workflow.ParseLocalPolicy(step, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, engine.BackoffAfter(p, 1))
	require.EqualValues(t, 2, engine.BackoffAfter(p, 2))
	require.EqualValues(t, 2, engine.BackoffAfter(p, 7))
}

// testWriter sends the runtime's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// An output the workflow cannot take (an unknown _next_step) fails the
// attempt like a handler error, and is retried as such.
func TestLocalActivityOutputTheWorkflowRejectsIsAFailure(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "Jump", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return enginetest.Obj(workflow.KeyNextStep, "nowhere"), nil
	})
	id := env.Dispatch(workflow.New("jump").LocalActivity("Jump", workflow.LocalActivityOptions{MaxAttempts: 1}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Contains(t, env.Workflow(id).ErrorMessage.String, "_next_step target 'nowhere' not found")
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityFailed, x.Status)
	require.Equal(t, store.AttemptFailed, env.attempts(id)[0].Status)
}

// An attempt whose step job was rescued while it ran (another claim holds
// it now) has its outcome discarded, the next step's rows included: the
// outcome transaction is rolled back whole, and the row's next claim
// replays the interrupted attempt (cold_replay).
func TestLocalActivityOutcomeOfARescuedAttemptIsDiscarded(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Rescued", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		if calls.Add(1) == 1 {
			// What the stale sweep does to a lapsed lease.
			env.DB.MustExec("UPDATE `" + env.Store.Tables()["jobs"] + "` SET status = 'pending', reserved_by = NULL, reserved_at = NULL WHERE handler = 'Rescued'")
		}
		return enginetest.Obj("r", true), nil
	})
	id := env.Dispatch(workflow.New("rescue").LocalActivity("Rescued", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{0}}).
		LocalActivity("IncStep", workflow.LocalActivityOptions{}), enginetest.Obj("n", 0))
	env.claimAndRun()
	require.Len(t, env.Jobs(id), 1, "the next step's job was rolled back with the discarded outcome")
	require.Equal(t, store.ActivityRunning, env.executions(id)[0].Status)

	env.claimAndRun() // cold replay: the interrupted attempt is closed, a retry scheduled
	env.claimAndRun() // attempt 2, then IncStep in process
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.EqualValues(t, 2, calls.Load())
	atts := env.attempts(id)
	require.Equal(t, store.AttemptExpired, atts[0].Status)
	require.Equal(t, engine.RetryColdReplay, atts[1].RetryReason.String)
	require.Equal(t, `{"n":1,"r":true}`, env.PublicJSON(id))
}

// interruptFirstAttempt registers class so that its first attempt is
// interrupted the way a crash is: the stale sweep takes the job back while
// the attempt runs, so its outcome is discarded and the execution stays
// running with that attempt (no terminal record). Later calls succeed.
func (env *localEnv) interruptFirstAttempt(t *testing.T, class string, calls *atomic.Int64) {
	env.step(t, class, func(context.Context, *workflow.State) (*phpjson.Object, error) {
		if calls.Add(1) == 1 {
			env.DB.MustExec("UPDATE `"+env.Store.Tables()["jobs"]+"` SET status = 'pending', reserved_by = NULL, reserved_at = NULL WHERE handler = ?", class)
		}
		return enginetest.Obj("ok", true), nil
	})
}

// expireDeadlines moves the named deadline columns of the workflow's
// execution into the past: the time the crashed worker took to be swept.
func (env *localEnv) expireDeadlines(wf int64, columns ...string) {
	for _, c := range columns {
		env.DB.MustExec("UPDATE `"+env.Store.Tables()["activity_executions"]+"` SET `"+c+"` = '2000-01-01 00:00:00' WHERE workflow_id = ?", wf)
	}
}

// An attempt interrupted past its start-to-close deadline timed out (spec
// §3.5 step 3 before step 4): the rescue retries it for timeout, not as
// a cold replay.
func TestLocalActivityInterruptedPastStartToCloseRetriesForTimeout(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.interruptFirstAttempt(t, "Crashy", &calls)
	id := env.Dispatch(workflow.New("crash").LocalActivity("Crashy", workflow.LocalActivityOptions{MaxAttempts: 2, Backoff: []int64{0}, StartToCloseTimeout: 10}), enginetest.Obj())
	env.claimAndRun()
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityRunning, x.Status, "the interrupted attempt left no terminal record")
	require.True(t, x.CloseDeadlineAt.Valid)
	env.expireDeadlines(id, "close_deadline_at")

	env.claimAndRun() // the rescued row: the timeout path
	require.EqualValues(t, 1, calls.Load(), "the class did not run on the rescue")
	require.Equal(t, "running", env.Workflow(id).Status)
	x = env.executions(id)[0]
	require.Equal(t, store.ActivityPending, x.Status)
	require.Equal(t, engine.RetryTimeout, x.RetryReason.String)
	require.Equal(t, workflow.TimeoutStartToClose, x.TimeoutKind.String)
	atts := env.attempts(id)
	require.Len(t, atts, 1)
	require.Equal(t, store.AttemptFailed, atts[0].Status)
	require.Equal(t, workflow.TimeoutStartToClose, atts[0].TimeoutKind.String)
	require.Equal(t, workflow.ActivityTimeoutClass, atts[0].ErrorClass.String)
	require.Contains(t, atts[0].ErrorMessage.String, "Local activity Crashy start-to-close deadline expired at 2000-01-01 00:00:00.000")
	hist := history(t, x)
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityRetryScheduled}, eventNames(hist))
	require.Equal(t, engine.RetryTimeout, hist[2].Context["retry_reason"])
	require.Equal(t, workflow.TimeoutStartToClose, hist[2].Context["timeout_kind"])
	require.Equal(t, atts[0].ID, hist[2].Context["retry_after_attempt_id"])

	env.claimAndRun() // attempt 2
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.EqualValues(t, 2, calls.Load())
	atts = env.attempts(id)
	require.Len(t, atts, 2)
	require.Equal(t, store.AttemptCompleted, atts[1].Status)
	require.Equal(t, engine.RetryTimeout, atts[1].RetryReason.String)
}

// On the last attempt the interrupted, expired attempt is a terminal
// timeout: workflow.ActivityTimedOut, the step and the workflow failed.
func TestLocalActivityInterruptedPastStartToCloseOnLastAttemptTimesOut(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.interruptFirstAttempt(t, "Crashy", &calls)
	id := env.Dispatch(workflow.New("crash").LocalActivity("Crashy", workflow.LocalActivityOptions{MaxAttempts: 1, StartToCloseTimeout: 10}), enginetest.Obj())
	env.claimAndRun()
	require.Equal(t, store.ActivityRunning, env.executions(id)[0].Status)
	env.expireDeadlines(id, "close_deadline_at")

	env.claimAndRun()
	require.EqualValues(t, 1, calls.Load())
	wf := env.Workflow(id)
	require.Equal(t, "failed", wf.Status)
	require.Contains(t, wf.ErrorMessage.String, "Local activity Crashy start-to-close deadline expired at ")
	require.Empty(t, env.PendingJobs())
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityFailed, x.Status)
	require.Equal(t, workflow.TimeoutStartToClose, x.TimeoutKind.String)
	require.Equal(t, workflow.ActivityTimeoutClass, x.LastErrorClass.String)
	atts := env.attempts(id)
	require.Len(t, atts, 1)
	require.Equal(t, store.AttemptFailed, atts[0].Status)
	require.Equal(t, workflow.TimeoutStartToClose, atts[0].TimeoutKind.String)
	hist := history(t, x)
	require.Equal(t, []string{workflow.ActivityScheduled, workflow.ActivityStarted, workflow.ActivityTimedOut}, eventNames(hist))
	require.Equal(t, workflow.TimeoutStartToClose, hist[2].Context["timeout_kind"])
	require.Equal(t, "timeout", hist[2].Context["failure_category"])
	require.Equal(t, store.StatusBuried, env.Jobs(id)[0].Status)
	evs := env.jobEvents(x.JobID)
	require.Equal(t, workflow.EventStepFailed, evs[len(evs)-1].Event)
	require.Equal(t, workflow.ActivityTimedOut, evs[len(evs)-1].Context["activity_event"])
	logs := env.jobLogs(x.JobID)
	require.Equal(t, []string{"buried", "workflow_failed"}, logs[len(logs)-2:])
}

// The kinds are checked in the spec's order: with the heartbeat and the
// start-to-close deadlines both passed, the timeout is heartbeat's.
func TestLocalActivityInterruptedPastHeartbeatTimesOutAsHeartbeat(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.interruptFirstAttempt(t, "Crashy", &calls)
	id := env.Dispatch(workflow.New("crash").LocalActivity("Crashy", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{0}, StartToCloseTimeout: 10, HeartbeatTimeout: 5}), enginetest.Obj())
	env.claimAndRun()
	env.expireDeadlines(id, "close_deadline_at", "heartbeat_deadline_at")

	env.claimAndRun()
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityPending, x.Status)
	require.Equal(t, engine.RetryTimeout, x.RetryReason.String)
	require.Equal(t, workflow.TimeoutHeartbeat, x.TimeoutKind.String)
	atts := env.attempts(id)
	require.Equal(t, workflow.TimeoutHeartbeat, atts[0].TimeoutKind.String)
	require.Contains(t, atts[0].ErrorMessage.String, "heartbeat deadline expired at 2000-01-01 00:00:00.000 (last heartbeat: never).")
}

// An attempt interrupted within its deadlines is still a cold replay.
func TestLocalActivityInterruptedWithinDeadlinesIsColdReplay(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.interruptFirstAttempt(t, "Crashy", &calls)
	id := env.Dispatch(workflow.New("crash").LocalActivity("Crashy", workflow.LocalActivityOptions{MaxAttempts: 2, Backoff: []int64{0}, StartToCloseTimeout: 600, ScheduleToCloseTimeout: 900, HeartbeatTimeout: 600}), enginetest.Obj())
	env.claimAndRun()
	x := env.executions(id)[0]
	require.Equal(t, store.ActivityRunning, x.Status)
	require.True(t, x.CloseDeadlineAt.Valid && x.HeartbeatDeadlineAt.Valid && x.ScheduleToCloseDeadlineAt.Valid, "the deadlines exist, not passed")

	env.claimAndRun()
	x = env.executions(id)[0]
	require.Equal(t, store.ActivityPending, x.Status)
	require.Equal(t, engine.RetryColdReplay, x.RetryReason.String)
	require.False(t, x.TimeoutKind.Valid)
	atts := env.attempts(id)
	require.Equal(t, store.AttemptExpired, atts[0].Status)
	require.False(t, atts[0].TimeoutKind.Valid)
	hist := history(t, x)
	require.Equal(t, engine.RetryColdReplay, hist[len(hist)-1].Context["retry_reason"])
	require.Nil(t, hist[len(hist)-1].Context["timeout_kind"])

	env.claimAndRun()
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, engine.RetryColdReplay, env.attempts(id)[1].RetryReason.String)
}
