package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gpuCreate is the create body of the spec's example (§1.12).
func gpuCreate(worker, session string) map[string]any {
	return map[string]any{
		"worker_id": worker, "session_id": session, "queue": "gpu-activities",
		"requirements": []string{"gpu:nvidia-l4"}, "lease_seconds": 120, "ttl_seconds": 600,
		"max_concurrent_activities": 1, "create_if_missing": true, "allow_reacquire_after_failure": true,
	}
}

// checkOperation validates a session lifecycle answer against the
// OpenAPI response it belongs to and the runtime schema's result.
func checkOperation(t *testing.T, r resp) {
	t.Helper()
	require.Equal(t, "1.13", r.header.Get(HeaderWorkerProtocol))
	validate(t, def(sessionsSchema, "workerSessionOperationResult"), r.raw)
	if r.status < 300 {
		validate(t, response("WorkerSessionOperation"), r.raw)
	} else {
		validate(t, response("WorkerError"), r.raw)
	}
}

// The server feature test's lifecycle: register with capabilities, create
// 201, heartbeat 200, list and detail, close 200, repeat close 200
// already_closed, and then the id is closed for everyone.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("gpu-worker-1", "gpu-activities", "gpu:nvidia-l4")

	body := gpuCreate("gpu-worker-1", "gpu-render")
	validate(t, def(sessionsSchema, "workerSessionCreateRequest"), body)
	r := e.do(req{path: "/api/worker/sessions", body: body})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, true, r.body["admitted"])
	require.Equal(t, "created", r.body["outcome"])
	require.Equal(t, float64(201), r.body["status"])
	require.Nil(t, r.body["reason"])
	require.Nil(t, r.body["activity_task_id"])
	require.Equal(t, "gpu-worker-1", r.obj("session")["lease_owner"])
	require.Equal(t, "2026-11-30T05:10:00Z", r.obj("session")["ttl_expires_at"])
	require.Equal(t, []any{"create", "heartbeat", "close"}, r.obj("server_capabilities")["worker_session_verbs"])

	e.clk.Advance(30 * time.Second)
	hb := map[string]any{"worker_id": "gpu-worker-1", "lease_seconds": 180}
	validate(t, def(sessionsSchema, "workerSessionHeartbeatRequest"), hb)
	r = e.do(req{path: "/api/worker/sessions/gpu-render/heartbeat", body: hb})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, "heartbeat_recorded", r.body["outcome"])
	require.Equal(t, "2026-11-30T05:03:30Z", r.obj("session")["lease_expires_at"])
	require.Equal(t, "2026-11-30T05:10:00Z", r.obj("session")["ttl_expires_at"], "a heartbeat never moves the TTL")

	list := e.do(req{method: http.MethodGet, path: "/api/worker-sessions"})
	require.Equal(t, http.StatusOK, list.status, "%s", list.raw)
	require.Equal(t, "2", list.header.Get(HeaderControlPlane))
	validate(t, def(sessionsSchema, "workerSessionVisibility"), list.raw)
	validate(t, sessionsSchema, list.raw)
	require.Equal(t, float64(1), list.obj("metrics")["active"])
	require.Equal(t, float64(1), list.obj("metrics")["total"])
	require.Equal(t, "active", list.body["sessions"].([]any)[0].(map[string]any)["status"])

	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions/gpu-render"})
	require.Equal(t, http.StatusOK, show.status, "%s", show.raw)
	validate(t, def(sessionsSchema, "workerSessionDetail"), show.raw)
	require.Equal(t, "default", show.body["namespace"])
	require.Equal(t, "gpu-worker-1", show.obj("session.holder")["worker_id"])

	cl := map[string]any{"worker_id": "gpu-worker-1"}
	validate(t, def(sessionsSchema, "workerSessionCloseRequest"), cl)
	r = e.do(req{method: http.MethodDelete, path: "/api/worker/sessions/gpu-render", body: cl})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, "closed", r.body["outcome"])
	require.Equal(t, "closed", r.obj("session")["status"])

	r = e.do(req{method: http.MethodDelete, path: "/api/worker/sessions/gpu-render", body: cl})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, "already_closed", r.body["outcome"])

	show = e.do(req{method: http.MethodGet, path: "/api/worker-sessions/gpu-render"})
	require.Equal(t, "closed", show.obj("session")["status"])

	e.register("gpu-worker-2", "gpu-activities", "gpu:nvidia-l4")
	r = e.do(req{path: "/api/worker/sessions", body: gpuCreate("gpu-worker-2", "gpu-render")})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, "session_closed", r.reason())
	require.Equal(t, false, r.body["admitted"])
}

// Each refusal of the registry reaches the worker with its own status and
// reason, in the result's shape.
func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu-activities", "gpu:nvidia-l4")
	e.register("w2", "gpu-activities", "gpu:nvidia-l4")
	e.register("cpu", "cpu-activities")
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: gpuCreate("w1", "held")}).status)

	cases := []struct {
		name, method, path string
		body               map[string]any
		status             int
		reason             string
		check              func(r resp)
	}{
		{"another worker's create", "POST", "/api/worker/sessions", gpuCreate("w2", "held"), 409, "session_owned_by_another_worker",
			func(r resp) { require.Equal(t, "w1", r.obj("session")["lease_owner"]) }},
		{"unregistered worker", "POST", "/api/worker/sessions", gpuCreate("ghost", "x"), 412, "worker_not_registered",
			func(r resp) { require.Equal(t, "ghost", r.body["worker_id"]) }},
		{"queue the worker is not on", "POST", "/api/worker/sessions", gpuCreate("cpu", "x"), 409, "session_queue_mismatch",
			func(r resp) {
				require.Equal(t, "cpu-activities", r.body["registered_task_queue"])
				require.Equal(t, "gpu-activities", r.body["requested_session_queue"])
			}},
		{"requirement not advertised", "POST", "/api/worker/sessions",
			map[string]any{"worker_id": "w2", "session_id": "y", "requirements": []string{"gpu:absent"}}, 409, "session_requirements_not_met",
			func(r resp) { require.Equal(t, []any{"gpu:absent"}, r.body["missing_requirements"]) }},
		{"missing without create", "POST", "/api/worker/sessions",
			map[string]any{"worker_id": "w2", "session_id": "z", "create_if_missing": false}, 409, "session_missing", nil},
		{"blank session id", "POST", "/api/worker/sessions",
			map[string]any{"worker_id": "w2", "session_id": "   "}, 422, "invalid_worker_session", nil},
		{"heartbeat by another worker", "POST", "/api/worker/sessions/held/heartbeat",
			map[string]any{"worker_id": "w2"}, 409, "session_owner_mismatch", nil},
		{"heartbeat of no session", "POST", "/api/worker/sessions/nope/heartbeat",
			map[string]any{"worker_id": "w1"}, 404, "session_not_found", nil},
		{"close by another worker", "DELETE", "/api/worker/sessions/held",
			map[string]any{"worker_id": "w2"}, 409, "session_owner_mismatch", nil},
		{"close of no session", "DELETE", "/api/worker/sessions/nope",
			map[string]any{"worker_id": "w1"}, 404, "session_not_found", nil},
		{"blank path id", "DELETE", "/api/worker/sessions/%20",
			map[string]any{"worker_id": "w1"}, 422, "invalid_worker_session", nil},
		{"empty path id", "POST", "/api/worker/sessions//heartbeat",
			map[string]any{"worker_id": "w1"}, 422, "invalid_worker_session", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			r := e.do(req{method: c.method, path: c.path, body: c.body})
			require.Equal(t, c.status, r.status, "%s", r.raw)
			require.Equal(t, c.reason, r.reason())
			require.Equal(t, float64(c.status), r.body["status"])
			require.Equal(t, false, r.body["admitted"])
			require.NotEmpty(t, r.body["error"])
			checkOperation(t, r)
			if c.check != nil {
				c.check(r)
			}
			require.Equal(t, before, e.dump(), "a refusal changes no row")
		})
	}
}

// A holder whose registration heartbeat is five minutes old is orphaned;
// another capable worker reacquires it with the original TTL, and the old
// holder's renewal is refused.
func TestSessionOrphanedThenReacquired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("old", "gpu-activities", "gpu:nvidia-l4")
	// A lease longer than the silence, so the session is orphaned by its
	// holder's stale registration, not expired.
	body := gpuCreate("old", "gpu-render")
	body["lease_seconds"] = 420
	r := e.do(req{path: "/api/worker/sessions", body: body})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	ttl := r.obj("session")["ttl_expires_at"]

	e.clk.Advance(5 * time.Minute)
	e.register("new", "gpu-activities", "gpu:nvidia-l4")
	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions/gpu-render"})
	require.Equal(t, "orphaned", show.obj("session")["status"])
	require.Equal(t, "worker_heartbeat_stale", show.obj("session")["failure_reason"])
	require.Equal(t, true, show.obj("session.holder")["is_stale"])

	r = e.do(req{path: "/api/worker/sessions", body: gpuCreate("new", "gpu-render")})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	checkOperation(t, r)
	require.Equal(t, "reacquired", r.body["outcome"])
	require.Equal(t, "new", r.obj("session")["lease_owner"])
	require.Equal(t, ttl, r.obj("session")["ttl_expires_at"], "reacquire keeps the TTL (spec ⚠3)")

	r = e.do(req{path: "/api/worker/sessions/gpu-render/heartbeat", body: map[string]any{"worker_id": "old"}})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	require.Equal(t, "session_owner_mismatch", r.reason())
}

// The worker-registration heartbeat is what keeps a holder fresh: with it
// the session stays active past the stale threshold; the detail then
// shows orphaned only once the registration goes quiet.
func TestRegistrationHeartbeatKeepsHolderFresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w", "gpu-activities", "gpu:nvidia-l4")
	r := e.do(req{path: "/api/worker/sessions", body: gpuCreate("w", "s")})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	for range 3 {
		e.clk.Advance(50 * time.Second)
		hb := e.do(req{path: "/api/worker/heartbeat", body: map[string]any{"worker_id": "w"}})
		require.Equal(t, http.StatusOK, hb.status, "%s", hb.raw)
		s := e.do(req{path: "/api/worker/sessions/s/heartbeat", body: map[string]any{"worker_id": "w"}})
		require.Equal(t, http.StatusOK, s.status, "%s", s.raw)
	}
	require.Equal(t, "active", e.do(req{method: http.MethodGet, path: "/api/worker-sessions/s"}).obj("session")["status"])

	// Renew only the session lease now: after 61 s the holder is stale.
	e.clk.Advance(40 * time.Second)
	require.Equal(t, http.StatusOK, e.do(req{path: "/api/worker/sessions/s/heartbeat", body: map[string]any{"worker_id": "w"}}).status)
	e.clk.Advance(30 * time.Second)
	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions/s"})
	require.Equal(t, "orphaned", show.obj("session")["status"])
	require.Equal(t, "worker_heartbeat_stale", show.obj("session")["failure_reason"])
	m := e.do(req{method: http.MethodGet, path: "/api/system/operator-metrics"})
	require.Equal(t, float64(1), m.obj("operator_metrics.worker_sessions")["orphaned"])
}

// A request below protocol 1.8 is fenced off the session routes; the
// same request at 1.8 gets through.
func TestSessionRoutesFenceOldProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w", "gpu-activities", "gpu:nvidia-l4")
	before := e.dump()
	for _, q := range []req{
		{path: "/api/worker/sessions", body: gpuCreate("w", "s")},
		{path: "/api/worker/sessions/s/heartbeat", body: map[string]any{"worker_id": "w"}},
		{method: http.MethodDelete, path: "/api/worker/sessions/s", body: map[string]any{"worker_id": "w"}},
	} {
		q.version = "1.7"
		r := e.do(q)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
		require.Equal(t, ReasonSessionsUnavailable, r.reason())
		require.Equal(t, "1.8", r.body["minimum_protocol_version"])
		require.Equal(t, "1.7", r.body["requested_version"])
		require.Equal(t, false, r.body["supported"])
		validate(t, response("WorkerError"), r.raw)
	}
	require.Equal(t, before, e.dump())
	r := e.do(req{path: "/api/worker/sessions", body: gpuCreate("w", "s"), version: "1.8"})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
}

// Namespaces keep sessions apart.
func TestSessionsAreNamespaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{path: "/api/worker/register", namespace: "team-a", body: map[string]any{"worker_id": "w", "task_queue": "q"}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	require.Equal(t, "team-a", r.body["namespace"])
	r = e.do(req{path: "/api/worker/sessions", namespace: "team-a", body: map[string]any{"worker_id": "w", "session_id": "s"}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	require.Equal(t, "team-a", r.obj("session")["namespace"])

	// Not registered in the default namespace.
	r = e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w", "session_id": "s"}})
	require.Equal(t, http.StatusPreconditionFailed, r.status, "%s", r.raw)
	require.Equal(t, float64(0), e.do(req{method: http.MethodGet, path: "/api/worker-sessions"}).obj("metrics")["total"])
	list := e.do(req{method: http.MethodGet, path: "/api/worker-sessions", namespace: "team-a"})
	require.Equal(t, float64(1), list.obj("metrics")["total"])
	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions/s"})
	require.Equal(t, http.StatusNotFound, show.status)
	require.Equal(t, ReasonWorkerSessionNotFound, show.reason())
	require.Equal(t, "Worker session [s] not found in namespace [default].", show.body["message"])
	require.Equal(t, "2", show.header.Get(HeaderControlPlane))
}

// Workers racing to create the same session over HTTP: exactly one gets
// it (201 created), every other one is told who holds it.
func TestConcurrentCreatesHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 8
	for i := range n {
		e.register(workerName(i), "gpu-activities", "gpu:nvidia-l4")
	}
	results := make(chan resp, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			results <- e.doAsync(req{path: "/api/worker/sessions", body: gpuCreate(workerName(i), "contended")})
		}()
	}
	close(start)
	created, owned := 0, 0
	var winner any
	for range n {
		r := <-results
		switch r.status {
		case http.StatusCreated:
			created++
			winner = r.obj("session")["lease_owner"]
		case http.StatusConflict:
			require.Equal(t, "session_owned_by_another_worker", r.reason(), "%s", r.raw)
			owned++
		default:
			t.Fatalf("unexpected answer %d: %s", r.status, r.raw)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, n-1, owned)
	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions"})
	require.Equal(t, float64(1), show.obj("metrics")["total"])
	require.Equal(t, winner, show.body["sessions"].([]any)[0].(map[string]any)["lease_owner"])
}

func workerName(i int) string { return "racer-" + string(rune('a'+i)) }
