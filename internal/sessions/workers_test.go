package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRegisterHeartbeatDeregister(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	w := e.registerWith(Registration{
		WorkerID: "w1", Queues: []string{" critical ", "default", "critical", ""},
		Capabilities: []string{" gpu:nvidia-l4", "", "query_tasks", "gpu:nvidia-l4 "},
		SDKVersion:   "queuety-go/1.0", TaskSlots: []byte(`{"session_available":3}`),
	})
	require.Equal(t, "default", w.Namespace)
	require.Equal(t, "critical", w.TaskQueue, "no TaskQueue: the first queue")
	require.Equal(t, []string{"critical", "default"}, w.Queues)
	require.Equal(t, []string{"gpu:nvidia-l4", "query_tasks"}, w.Capabilities)
	require.Equal(t, "go", w.Runtime)
	require.Equal(t, 10, *w.MaxConcurrentWorkerSessions)
	require.Equal(t, 10, w.HeartbeatIntervalSeconds)
	require.Equal(t, `{"session_available":3}`, string(w.TaskSlots))
	require.Nil(t, w.ProcessMetrics)
	require.Equal(t, StatusActive, w.Status)
	require.Equal(t, t0, *w.LastHeartbeatAt)
	require.Equal(t, t0, w.RegisteredAt)
	require.False(t, w.IsStale)

	e.clk.Advance(61 * time.Second)
	w, err := e.reg.Worker(e.ctx, "", "w1")
	require.NoError(t, err)
	require.True(t, w.IsStale)
	w, err = e.reg.Heartbeat(e.ctx, "", "w1", nil, []byte(`{"memory_bytes":1024,"host":"a\/b"}`))
	require.NoError(t, err)
	require.False(t, w.IsStale)
	require.Equal(t, t0.Add(61*time.Second), *w.LastHeartbeatAt)
	require.Equal(t, `{"session_available":3}`, string(w.TaskSlots), "kept when not sent")
	require.Equal(t, `{"memory_bytes":1024,"host":"a\/b"}`, string(w.ProcessMetrics), "stored PHP-encoded")

	// Re-registering replaces the fields and keeps registered_at.
	e.clk.Advance(time.Second)
	w = e.registerWith(Registration{WorkerID: "w1", TaskQueue: "gpu", Runtime: "php", MaxConcurrentWorkerSessions: val(2), HeartbeatIntervalSeconds: 5})
	require.Equal(t, "gpu", w.TaskQueue)
	require.Equal(t, []string{"gpu"}, w.Queues)
	require.Empty(t, w.Capabilities)
	require.Equal(t, "php", w.Runtime)
	require.Equal(t, 2, *w.MaxConcurrentWorkerSessions)
	require.Equal(t, 5, w.HeartbeatIntervalSeconds)
	require.Equal(t, t0, w.RegisteredAt)
	require.Equal(t, t0.Add(62*time.Second), *w.LastHeartbeatAt)

	e.register("w0")
	ws, err := e.reg.Workers(e.ctx, "")
	require.NoError(t, err)
	require.Len(t, ws, 2)
	require.Equal(t, "w0", ws[0].WorkerID)
	other, err := e.reg.Workers(e.ctx, "other")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, e.reg.Deregister(e.ctx, "", "w1"))
	require.ErrorIs(t, e.reg.Deregister(e.ctx, "", "w1"), ErrWorkerNotRegistered)
	_, err = e.reg.Worker(e.ctx, "", "w1")
	require.ErrorIs(t, err, ErrWorkerNotRegistered)
	_, err = e.reg.Heartbeat(e.ctx, "", "w1", nil, nil)
	require.ErrorIs(t, err, ErrWorkerNotRegistered)
}

func TestRegisterGeneratesAnIDAndRejectsBadFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.registerWith(Registration{TaskQueue: "default"})
	require.Len(t, w.WorkerID, 26, "a ULID")

	for _, tc := range []struct {
		name string
		reg  Registration
		want string
	}{
		{"no queue", Registration{WorkerID: "w"}, "names no task queue"},
		{"long id", Registration{WorkerID: strings.Repeat("x", 65), TaskQueue: "q"}, "at most 64"},
		{"runtime", Registration{WorkerID: "w", TaskQueue: "q", Runtime: "cobol"}, `runtime "cobol"`},
		{"session limit", Registration{WorkerID: "w", TaskQueue: "q", MaxConcurrentWorkerSessions: val(-1)}, "max_concurrent_worker_sessions"},
		{"interval", Registration{WorkerID: "w", TaskQueue: "q", HeartbeatIntervalSeconds: 3601}, "1 to 3600"},
		{"slots", Registration{WorkerID: "w", TaskQueue: "q", TaskSlots: []byte(`{"a":`)}, "task_slots is not valid JSON"},
		{"metrics", Registration{WorkerID: "w", TaskQueue: "q", ProcessMetrics: []byte(`[1]`)}, "process_metrics must be a JSON object"},
		{"capability", Registration{WorkerID: "w", TaskQueue: "q", Capabilities: []string{strings.Repeat("c", 256)}}, "longer than 255"},
		{"namespace", Registration{Namespace: strings.Repeat("n", 129), WorkerID: "w", TaskQueue: "q"}, "longer than 128"},
	} {
		_, err := e.reg.Register(e.ctx, tc.reg)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	ws, err := e.reg.Workers(e.ctx, "")
	require.NoError(t, err)
	require.Len(t, ws, 1, "nothing stored for a rejected registration")
}

func TestValidateWorkerID(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateWorkerID(strings.Repeat("é", 64)), "characters, not bytes")
	require.ErrorIs(t, ValidateWorkerID(strings.Repeat("é", 65)), ErrInvalidWorkerID)
	require.ErrorContains(t, ValidateWorkerID(strings.Repeat("x", 65)), "jobs.reserved_by is VARCHAR(64)")
	require.ErrorIs(t, ValidateWorkerID(" "), ErrInvalidWorkerID)

	e := newEnv(t)
	long := strings.Repeat("x", 65)
	_, err := e.reg.Create(e.ctx, "", long, gpu("s"))
	require.ErrorIs(t, err, ErrInvalidWorkerID)
	_, err = e.reg.Admit(e.ctx, e.st.Sessions(), Admission{WorkerID: long, Options: gpu("s"), JobID: 1})
	require.ErrorIs(t, err, ErrInvalidWorkerID)
	_, err = e.reg.HeartbeatSession(e.ctx, "", "s", long, nil)
	require.ErrorIs(t, err, ErrInvalidWorkerID)
	_, err = e.reg.Close(e.ctx, "", "s", long)
	require.ErrorIs(t, err, ErrInvalidWorkerID)
}

// Ids compare exactly: a session or worker id differing only in case is
// another one.
func TestIDsAreCaseSensitive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("W1", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)
	requireAdmitted(t, e.create("W1", gpu("S")), OutcomeCreated, 201)
	requireRefused(t, e.create("W1", gpu("s")), ReasonOwnedByAnotherWorker)
	require.Equal(t, 2, e.list().Metrics.Total)
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	require.Len(t, Reasons, 13)
	want := map[string]int{ReasonInvalidWorkerSession: 422, ReasonWorkerNotRegistered: 412, ReasonSessionNotFound: 404}
	for _, r := range Reasons {
		code, ok := want[r]
		if !ok {
			code = 409
		}
		require.Equal(t, code, HTTPStatus(r), r)
		validate(t, "workerSessionOperationResult", Result{Status: code, Reason: r, Error: "x"})
	}
	require.Equal(t, 200, HTTPStatus(""))
}
