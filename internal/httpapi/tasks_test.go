package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/sessions"
)

// pollResponse is the activity poll's 200 body: oneOf ActivityTaskClaim,
// EmptyPoll, DrainingPoll.
const pollResponse = openapi + "#/paths/~1worker~1activity-tasks~1poll/post/responses/200/content/application~1json/schema"

// sessionSnapshot creates a session for worker w through the registry and
// returns its snapshot.
func (e *env) sessionSnapshot(w, id string) *sessions.Snapshot {
	e.t.Helper()
	r := e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": w, "session_id": id, "queue": "gpu-activities"}})
	require.Equal(e.t, http.StatusCreated, r.status, "%s", r.raw)
	snap, err := e.reg.Get(e.ctx, "", id)
	require.NoError(e.t, err)
	return &snap
}

func TestPollLeasesATask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do(req{path: "/api/worker/register", body: map[string]any{"worker_id": "w1", "task_queues": []string{"gpu-activities", "default"}}})
	snap := e.sessionSnapshot("w1", "gpu-render")
	wf, step := int64(3), 1
	e.tasks.set(func(f *fakeTasks) {
		f.queue = []*Task{{
			JobID: 7, Attempt: 2, Handler: `App\Render`, Queue: "gpu-activities",
			Payload: []byte(`{"frame":1,"path":"a\/b"}`), WorkflowID: &wf, StepIndex: &step,
			LeaseExpiresAt: t0.Add(5 * time.Minute), WorkerSession: snap,
		}}
	})
	body := map[string]any{"worker_id": "w1", "task_queues": []string{"gpu-activities"}, "poll_timeout_seconds": 0}
	validate(t, component("PollRequest"), body)
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: body})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, component("ActivityTaskClaim"), r.raw)
	validate(t, pollResponse, r.raw) // exactly one of claim, empty, draining
	invalid(t, component("EmptyPoll"), r.body)
	require.Equal(t, "leased", r.body["poll_status"])
	task := r.obj("task")
	require.Equal(t, "7", task["task_id"])
	require.Equal(t, "7.2", task["activity_attempt_id"])
	require.Equal(t, float64(2), task["attempt"])
	require.Equal(t, `App\Render`, task["activity_type"])
	require.Equal(t, "gpu-activities", task["task_queue"])
	require.Equal(t, "w1", task["lease_owner"])
	require.Equal(t, "2026-11-30T05:05:00Z", task["lease_expires_at"])
	require.Equal(t, "3", task["workflow_id"])
	require.Equal(t, map[string]any{"frame": float64(1), "path": "a/b"}, task["payload"])
	aff := r.obj("task.worker_session")
	require.Equal(t, "gpu-render", aff["session_id"])
	require.Equal(t, "w1", aff["lease_owner"])
	require.Equal(t, "active", aff["status"])
	validate(t, def(sessionsSchema, "workerSessionTaskAffinity"), aff)

	polls := e.tasks.snapshot().polls
	require.Equal(t, []TaskPoll{{Namespace: "default", WorkerID: "w1", Queues: []string{"gpu-activities"}, AllowSessions: true}}, polls)
}

// An empty poll answers task null, poll_status empty; without queues the
// poll covers every queue the worker registered; a worker below protocol
// 1.8 is marked so the job runtime never hands it a session-bound job.
func TestPollEmptyAndItsDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do(req{path: "/api/worker/register", body: map[string]any{"worker_id": "w1", "task_queue": "a", "task_queues": []string{"b"}}})
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 0}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, component("EmptyPoll"), r.raw)
	validate(t, pollResponse, r.raw)
	require.Nil(t, r.body["task"])
	require.Equal(t, "empty", r.body["poll_status"])

	r = e.do(req{path: "/api/worker/activity-tasks/poll", version: "1.7", body: map[string]any{"worker_id": "w1", "task_queue": "b", "poll_timeout_seconds": 0}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	polls := e.tasks.snapshot().polls
	require.Equal(t, TaskPoll{Namespace: "default", WorkerID: "w1", Queues: []string{"a", "b"}, AllowSessions: true}, polls[0])
	require.Equal(t, TaskPoll{Namespace: "default", WorkerID: "w1", Queues: []string{"b"}, AllowSessions: false}, polls[1])
}

// The poll keeps asking until work appears.
func TestPollWaitsForWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "q")
	e.tasks.set(func(f *fakeTasks) {
		f.emptyPolls = 3
		f.queue = []*Task{{JobID: 9, Attempt: 1, Handler: "h", Queue: "q", LeaseExpiresAt: t0}}
	})
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 30}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Equal(t, "9", r.obj("task")["task_id"])
	require.Nil(t, r.obj("task")["payload"])
	require.Len(t, e.tasks.snapshot().polls, 4)
}

// A worker that hangs up ends its long poll; nothing is claimed for it.
func TestPollEndsWhenTheWorkerGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "q")
	called := make(chan struct{}, 1)
	e.tasks.set(func(f *fakeTasks) { f.emptyPolls = 1 << 30; f.pollCalled = called })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-called; cancel() }()
	r := e.do(req{ctx: ctx, path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 30}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Equal(t, "empty", r.body["poll_status"])
}

func TestTasksUnavailableWithoutATaskSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Tasks = nil })
	e.register("w1", "q")
	for _, path := range []string{"/api/worker/activity-tasks/poll", "/api/worker/activity-tasks/1/complete"} {
		r := e.do(req{path: path, body: map[string]any{"worker_id": "w1"}})
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.raw)
		require.Equal(t, ReasonTasksUnavailable, r.reason())
		validate(t, response("WorkerError"), r.raw)
	}
	info := e.do(req{method: http.MethodGet, path: "/api/cluster/info"})
	require.Equal(t, false, info.obj("capabilities")["activity_tasks"])
}

func TestTaskHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu-activities")
	snap := e.sessionSnapshot("w1", "s")

	// The OpenAPI's shape: progress as one value.
	e.tasks.set(func(f *fakeTasks) {
		f.hbResult = TaskHeartbeatResult{Recorded: true, CanContinue: true, LeaseExpiresAt: t0.Add(time.Minute), Session: snap}
	})
	body := map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1", "progress": map[string]any{"pct": 50, "url": "a/b"}}
	validate(t, component("TaskHeartbeatRequest"), body)
	r := e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: body})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	validate(t, def(sessionsSchema, "workerSessionSnapshot"), r.obj("worker_session"))
	require.Equal(t, true, r.body["heartbeat_recorded"])
	require.Equal(t, true, r.body["can_continue"])
	require.Equal(t, "2026-11-30T05:01:00Z", r.body["lease_expires_at"])
	hb := e.tasks.snapshot().heartbeats[0]
	require.Equal(t, TaskHeartbeat{Namespace: "default", WorkerID: "w1", JobID: 7, Attempt: 1, Progress: []byte(`{"pct":50,"url":"a\/b"}`)}, hb)

	// The server's shape: message, current, total, unit, details.
	r = e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{
		"lease_owner": "w1", "activity_attempt_id": "7.1", "message": "Polling remote job", "current": 3, "total": 10, "unit": "frames", "details": map[string]any{"k": "v"},
	}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.JSONEq(t, `{"message":"Polling remote job","current":3,"total":10,"unit":"frames","details":{"k":"v"}}`, string(e.tasks.snapshot().heartbeats[1].Progress))

	// An empty heartbeat body is allowed by the OpenAPI but names no attempt.
	r = e.do(req{path: "/api/worker/activity-tasks/7/heartbeat"})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.raw)

	// A cancel request is a normal answer: the worker should stop.
	e.tasks.set(func(f *fakeTasks) {
		f.hbResult = TaskHeartbeatResult{Recorded: true, CancelRequested: true, Reason: "run_cancelled", LeaseExpiresAt: t0}
	})
	r = e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1"}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Equal(t, true, r.body["cancel_requested"])
	require.Equal(t, false, r.body["can_continue"])

	// A stale attempt is fenced.
	e.tasks.set(func(f *fakeTasks) {
		f.hbResult = TaskHeartbeatResult{Reason: "stale_attempt", Error: "Attempt 1 of job 7 is no longer current."}
	})
	r = e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1"}})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	validate(t, response("WorkerError"), r.raw)
	require.Equal(t, "stale_attempt", r.reason())
	require.Nil(t, r.body["lease_expires_at"])

	e.tasks.set(func(f *fakeTasks) { f.hbResult = TaskHeartbeatResult{Reason: ReasonTaskNotFound} })
	r = e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1"}})
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.raw)
}

// When the session renewal is refused the heartbeat is not recorded and
// the answer carries the renewal with the session's status code (§1.8).
func TestTaskHeartbeatSessionRenewalRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu-activities")
	e.sessionSnapshot("w1", "s")
	closed := e.do(req{method: http.MethodDelete, path: "/api/worker/sessions/s", body: map[string]any{"worker_id": "w1"}})
	require.Equal(t, http.StatusOK, closed.status)
	renewal, err := e.reg.HeartbeatSession(e.ctx, "", "s", "w1", nil)
	require.NoError(t, err)
	require.Equal(t, sessions.ReasonSessionNotActive, renewal.Reason)
	e.tasks.set(func(f *fakeTasks) {
		f.hbResult = TaskHeartbeatResult{Reason: renewal.Reason, Error: renewal.Error, Session: renewal.Session, Renewal: &renewal}
	})
	r := e.do(req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1"}})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	validate(t, response("WorkerError"), r.raw)
	require.Equal(t, false, r.body["can_continue"])
	require.Equal(t, false, r.body["heartbeat_recorded"])
	require.Equal(t, "session_not_active", r.reason())
	require.Equal(t, "closed", r.obj("worker_session")["status"])
	require.Equal(t, map[string]any{"admitted": false, "status": float64(409), "reason": "session_not_active", "error": renewal.Error}, r.obj("worker_session_renewal"))
}

func TestTaskComplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tasks.set(func(f *fakeTasks) { f.outcome = TaskOutcome{Recorded: true, JobStatus: "completed"} })
	body := map[string]any{"worker_id": "w1", "activity_attempt_id": "7.1", "result": map[string]any{"url": "s3://bucket/é"}}
	validate(t, component("ActivityTaskCompleteRequest"), body)
	r := e.do(req{path: "/api/worker/activity-tasks/7/complete", body: body})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	require.Equal(t, "completed", r.body["outcome"])
	require.Equal(t, true, r.body["recorded"])
	require.Nil(t, r.body["reason"])
	require.Equal(t, "completed", r.body["job_status"])
	c := e.tasks.snapshot().completions[0]
	// The result reaches the runtime as PHP would store it.
	require.Equal(t, TaskCompletion{Namespace: "default", WorkerID: "w1", JobID: 7, Attempt: 1, Result: []byte(`{"url":"s3:\/\/bucket\/\u00e9"}`)}, c)

	// No result, or null, is nil.
	r = e.do(req{path: "/api/worker/activity-tasks/7/complete", body: map[string]any{"lease_owner": "w1", "activity_attempt_id": "7.1", "result": nil}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Nil(t, e.tasks.snapshot().completions[1].Result)

	// A fenced completion (the attempt was rescued and retried) is 409.
	e.tasks.set(func(f *fakeTasks) {
		f.outcome = TaskOutcome{Reason: "stale_attempt", Error: "Job 7 is on attempt 2; attempt 1's result was not recorded."}
	})
	r = e.do(req{path: "/api/worker/activity-tasks/7/complete", body: body})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	validate(t, response("WorkerError"), r.raw)
	require.Equal(t, "rejected", r.body["outcome"])
	require.Equal(t, false, r.body["recorded"])
	require.Equal(t, "stale_attempt", r.reason())
	require.NotEmpty(t, r.body["error"])

	e.tasks.set(func(f *fakeTasks) { f.outcome = TaskOutcome{Reason: ReasonAttemptNotFound, Error: "no such attempt"} })
	r = e.do(req{path: "/api/worker/activity-tasks/7/complete", body: body})
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.raw)
}

func TestTaskFail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tasks.set(func(f *fakeTasks) { f.outcome = TaskOutcome{Recorded: true, JobStatus: "pending"} })
	flat := map[string]any{"worker_id": "w1", "activity_attempt_id": "7.3", "message": "GPU out of memory", "exception_type": "OOMError", "non_retryable": true}
	validate(t, component("TaskFailureRequest"), flat)
	r := e.do(req{path: "/api/worker/activity-tasks/7/fail", body: flat})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	require.Equal(t, "failed", r.body["outcome"])
	require.Equal(t, "pending", r.body["job_status"])

	nested := map[string]any{"lease_owner": "w1", "activity_attempt_id": "7.3", "failure": map[string]any{
		"message": "bad input", "type": "ValueError", "retryable": false, "stack_trace": "...", "details": []any{1},
	}}
	r = e.do(req{path: "/api/worker/activity-tasks/7/fail", body: nested})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)

	legacy := map[string]any{"worker_id": "w1", "activity_attempt_id": "7.3", "error": "timeout"}
	r = e.do(req{path: "/api/worker/activity-tasks/7/fail", body: legacy})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)

	require.Equal(t, []TaskFailure{
		{Namespace: "default", WorkerID: "w1", JobID: 7, Attempt: 3, Message: "GPU out of memory", ExceptionType: "OOMError", NonRetryable: true},
		{Namespace: "default", WorkerID: "w1", JobID: 7, Attempt: 3, Message: "bad input", ExceptionType: "ValueError", NonRetryable: true},
		{Namespace: "default", WorkerID: "w1", JobID: 7, Attempt: 3, Message: "timeout"},
	}, e.tasks.snapshot().failures)
}

// Stop answers a waiting long poll with an empty poll instead of holding
// shutdown for it, over a real listener.
func TestStartServesAndStopEndsLongPolls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Listen = "127.0.0.1:0" })
	e.register("w1", "q")
	called := make(chan struct{}, 1)
	e.tasks.set(func(f *fakeTasks) { f.emptyPolls = 1 << 30; f.pollCalled = called })
	require.NoError(t, e.srv.Start(e.ctx))
	addr := e.srv.Addr()
	require.NotEqual(t, "127.0.0.1:0", addr)

	type result struct {
		status int
		body   map[string]any
		err    error
	}
	done := make(chan result, 1)
	go func() {
		raw, _ := json.Marshal(map[string]any{"worker_id": "w1", "poll_timeout_seconds": 30})
		rq, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/worker/activity-tasks/poll", bytes.NewReader(raw))
		rq.Header.Set("Authorization", "Bearer "+workerToken)
		rq.Header.Set(HeaderWorkerProtocol, "1.13")
		res, err := http.DefaultClient.Do(rq)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		err = json.Unmarshal(b, &m)
		done <- result{status: res.StatusCode, body: m, err: err}
	}()
	<-called
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, e.srv.Stop(ctx))
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, "empty", got.body["poll_status"])

	_, err := http.Get("http://" + addr + "/api/cluster/info")
	require.Error(t, err, "stopped: nothing listens any more")
}

func TestOperatorMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) {
		c.Metrics = fakeMetrics{"activities": map[string]any{"local": 1, "local_open": 0, "local_attempts": 1, "queued_open": 0}}
	})
	e.register("w1", "q")
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "a"}}).status)
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "b"}}).status)
	require.Equal(t, http.StatusOK, e.do(req{method: http.MethodDelete, path: "/api/worker/sessions/b", body: map[string]any{"worker_id": "w1"}}).status)

	r := e.do(req{method: http.MethodGet, path: "/api/system/operator-metrics", namespace: "default"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Equal(t, "2", r.header.Get(HeaderControlPlane))
	ws := r.obj("operator_metrics.worker_sessions")
	validate(t, def(sessionsSchema, "workerSessionMetrics"), ws)
	require.Equal(t, map[string]any{"total": float64(2), "active": float64(1), "closed": float64(1), "expired": float64(0), "failed": float64(0), "orphaned": float64(0)}, ws)
	require.Equal(t, float64(1), r.obj("operator_metrics.activities")["local"])
	require.Equal(t, "default", r.obj("operator_metrics")["namespace_seen"])
}

func TestInsecureModeOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	require.True(t, Loopback("127.0.0.1:8080"))
	require.True(t, Loopback("[::1]:0"))
	require.True(t, Loopback("localhost:80"))
	require.False(t, Loopback(":8080"))
	require.False(t, Loopback("0.0.0.0:8080"))
	require.False(t, Loopback("10.0.0.5:8080"))

	e := newEnv(t, func(c *Config) {
		c.InsecureNoAuth = true
		c.WorkerToken, c.OperatorToken = "", ""
		c.Listen = "0.0.0.0:0"
	})
	err := e.srv.Start(e.ctx)
	require.ErrorContains(t, err, "only a loopback address")
	r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", noToken: true, host: "127.0.0.1:8080"})
	require.Equal(t, http.StatusOK, r.status, "no auth: any caller on a loopback Host")

	_, err = New(Config{Registry: e.reg, WorkerToken: "same", OperatorToken: "same"})
	require.ErrorContains(t, err, "must differ")
	_, err = New(Config{Registry: e.reg, WorkerToken: "w"})
	require.ErrorContains(t, err, "an operator token is required")
}

// A bug in the task source still gets the worker a JSON answer.
func TestPanicIsAJSONError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Tasks = &panickyTasks{} })
	e.register("w1", "q")
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 0}})
	require.Equal(t, http.StatusInternalServerError, r.status, "%s", r.raw)
	require.Equal(t, ReasonInternalError, r.reason())
	validate(t, response("WorkerError"), r.raw)
	require.NotContains(t, string(r.raw), "boom", "details stay in the log")
}

type panickyTasks struct{ fakeTasks }

func (*panickyTasks) Poll(context.Context, TaskPoll) (*Task, error) { panic("boom") }

// A worker deregistered while its poll waited gets 412, like one that
// never registered; any other failure of the task source is a 500.
func TestPollErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "q")
	e.tasks.set(func(f *fakeTasks) { f.pollErr = fmt.Errorf("poll: %w", sessions.ErrWorkerNotRegistered) })
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 0}})
	require.Equal(t, http.StatusPreconditionFailed, r.status, "%s", r.raw)
	require.Equal(t, ReasonWorkerNotRegistered, r.reason())

	e.tasks.set(func(f *fakeTasks) { f.pollErr = errors.New("database is gone") })
	r = e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": 0}})
	require.Equal(t, http.StatusInternalServerError, r.status, "%s", r.raw)
	require.Equal(t, ReasonInternalError, r.reason())
	validate(t, response("WorkerError"), r.raw)
}
