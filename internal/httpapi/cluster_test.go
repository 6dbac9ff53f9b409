package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClusterInfoPublishesBothContracts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{workerToken, operatorToken} {
		// No protocol or control-plane header: cluster info is how a
		// client learns the versions.
		r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", token: tok, version: "-", controlPlane: "-"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.raw)

		wp := r.obj("worker_protocol")
		require.Equal(t, "1.13", wp["version"], "a 1.N string (spec ⚠2), not an integer")
		caps := r.obj("worker_protocol.server_capabilities")
		require.Equal(t, []any{"create", "heartbeat", "close"}, caps["worker_session_verbs"])
		ws := r.obj("worker_protocol.server_capabilities.worker_sessions")
		require.Equal(t, true, ws["supported"])
		require.Equal(t, "1.8", ws["minimum_protocol_version"])
		require.Equal(t, "1.8", r.obj("worker_protocol.server_capabilities.worker_sessions.rollout_safety")["minimum_protocol_version"])
		la := r.obj("worker_protocol.server_capabilities.local_activities")
		require.Equal(t, true, la["supported"])
		require.Equal(t, "durable-workflow.v2.local-activity.contract", la["schema"])
		require.Equal(t, "workflow.Builder.LocalActivity", r.obj("worker_protocol.server_capabilities.local_activities.api.queuety")["go_builder"])
		require.Equal(t, float64(60), r.obj("worker_protocol.server_capabilities.worker_status")["stale_after_seconds"])

		// The document, its server_capabilities, and each contract validate
		// against the runtime schemas and the OpenAPI's capabilities.
		validate(t, sessionsSchema, r.raw)
		validate(t, localSchema, r.raw)
		validate(t, sessionsSchema, caps)
		validate(t, localSchema, caps)
		validate(t, def(sessionsSchema, "workerSessionRuntimeContract"), ws)
		validate(t, def(localSchema, "localActivityRuntimeContract"), la)
		validate(t, component("WorkerServerCapabilities"), caps)
	}
}

// The checks above can fail: a contract missing a required key, or with a
// wrong constant, does not validate.
func TestContractSchemasRejectBrokenContracts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", version: "-", controlPlane: "-"})
	ws := r.obj("worker_protocol.server_capabilities.worker_sessions")
	delete(ws, "ownership")
	invalid(t, def(sessionsSchema, "workerSessionRuntimeContract"), ws)
	la := r.obj("worker_protocol.server_capabilities.local_activities")
	la["api"].(map[string]any)["options"] = "Queuety\\LocalActivityOptions"
	invalid(t, def(localSchema, "localActivityRuntimeContract"), la)
	// The OpenAPI's capabilities reach into the sessions schema file.
	caps := r.obj("worker_protocol.server_capabilities")
	invalid(t, component("WorkerServerCapabilities"), caps)
	caps = e.do(req{method: http.MethodGet, path: "/api/cluster/info", version: "-", controlPlane: "-"}).obj("worker_protocol.server_capabilities")
	caps["worker_session_verbs"] = []any{}
	invalid(t, component("WorkerServerCapabilities"), caps)
}

func TestClusterInfoNeedsAToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", noToken: true})
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, ReasonUnauthorized, r.reason())
	r = e.do(req{method: http.MethodGet, path: "/api/cluster/info", token: "nope"})
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, ReasonUnauthorized, r.reason())
}

// A server configured below 1.8 is the fence of the server tests: no verbs,
// worker_sessions.supported=false, and the session routes refuse.
func TestServerBelowSessionMinimumAdvertisesNoSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.AdvertisedVersion = "1.7" })
	r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", version: "-"})
	caps := r.obj("worker_protocol.server_capabilities")
	require.Equal(t, []any{}, caps["worker_session_verbs"])
	ws := r.obj("worker_protocol.server_capabilities.worker_sessions")
	require.Equal(t, false, ws["supported"])
	require.Equal(t, "worker_protocol_version_below_worker_session_minimum", ws["unavailable_reason"])
	validate(t, def(sessionsSchema, "workerSessionRuntimeContract"), ws)

	reg := e.do(req{path: "/api/worker/register", version: "1.7", body: map[string]any{"worker_id": "w1", "task_queue": "gpu", "runtime": "python"}})
	require.Equal(t, http.StatusCreated, reg.status, "%s", reg.raw)
	require.Equal(t, []any{}, reg.obj("server_capabilities")["worker_session_verbs"])
	require.Equal(t, false, reg.obj("server_capabilities.worker_sessions")["supported"])

	before := e.dump()
	r = e.do(req{path: "/api/worker/sessions", version: "1.7", body: map[string]any{"worker_id": "w1", "session_id": "s"}})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	require.Equal(t, ReasonSessionsUnavailable, r.reason())
	require.Equal(t, false, r.body["supported"])
	require.Equal(t, "1.8", r.body["minimum_protocol_version"])
	require.Equal(t, "1.7", r.body["protocol_version"])
	require.Equal(t, before, e.dump())
}
