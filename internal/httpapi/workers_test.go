package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
)

// Registration accepts the OpenAPI's shape and the server's (spec ⚠1),
// answers 201, and stores what the session admission needs.
func TestRegisterAcceptsBothShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	openAPIShape := map[string]any{
		"worker_id": "py-1", "task_queues": []string{"gpu-activities", "default"},
		"build_id": "b1", "workflow_types": []string{}, "activity_types": []string{"Render"},
		"workflow_definition_fingerprints": map[string]string{},
	}
	validate(t, component("WorkerRegistrationRequest"), openAPIShape)
	r := e.do(req{path: "/api/worker/register", body: openAPIShape})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	require.Equal(t, "py-1", r.body["worker_id"])
	require.Equal(t, true, r.body["registered"])
	require.Equal(t, "gpu-activities", r.body["task_queue"])
	require.Equal(t, []any{"gpu-activities", "default"}, r.body["task_queues"])
	require.Equal(t, "external", r.body["runtime"])
	require.Equal(t, "active", r.body["status"])
	require.Equal(t, "1.13", r.header.Get(HeaderWorkerProtocol))

	serverShape := map[string]any{
		"task_queue": "gpu-activities", "runtime": "rust", "sdk_version": "0.4.0",
		"supported_workflow_types": []string{}, "supported_activity_types": []string{"Render"},
		"capabilities":                   []string{" gpu:nvidia-l4 ", "", "gpu:nvidia-l4", "fs:/mnt/models"},
		"max_concurrent_worker_sessions": 1, "max_concurrent_activity_tasks": 4,
		"task_slots":                 map[string]any{"activity_available": 4, "session_available": 1},
		"process_metrics":            map[string]any{"cpu_percent": 12.5, "memory_bytes": 1 << 20, "host": "gpu-box", "process_id": 42},
		"heartbeat_interval_seconds": 5,
	}
	r = e.do(req{path: "/api/worker/register", body: serverShape})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	id := r.str("worker_id")
	_, err := ulid.ParseStrict(id)
	require.NoError(t, err, "a worker without an id gets a ULID")
	require.Equal(t, []any{"gpu:nvidia-l4", "fs:/mnt/models"}, r.body["capabilities"], "trimmed, empties dropped, deduplicated")
	require.Equal(t, float64(1), r.body["max_concurrent_worker_sessions"])
	require.Equal(t, float64(5), r.body["heartbeat_interval_seconds"])

	wk, err := e.reg.Worker(e.ctx, "", id)
	require.NoError(t, err)
	require.Equal(t, "rust", wk.Runtime)
	require.Equal(t, "0.4.0", wk.SDKVersion)
	require.JSONEq(t, `{"activity_available":4,"session_available":1}`, string(wk.TaskSlots))
	require.JSONEq(t, `{"cpu_percent":12.5,"memory_bytes":1048576,"host":"gpu-box","process_id":42}`, string(wk.ProcessMetrics))

	// The registered limit is the one admission applies.
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": id, "session_id": "a"}}).status)
	r = e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": id, "session_id": "b"}})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.raw)
	require.Equal(t, "worker_session_limit_exceeded", r.reason())
	require.Equal(t, float64(1), r.body["max_concurrent_worker_sessions"])
}

// Re-registering the same id updates it in place.
func TestReRegisterUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w", "q1", "a")
	e.clk.Advance(time.Minute)
	r := e.register("w", "q2", "b")
	require.Equal(t, "q2", r.body["task_queue"])
	require.Equal(t, []any{"b"}, r.body["capabilities"])
	require.Equal(t, "2026-11-30T05:01:00Z", r.body["last_heartbeat_at"])
	ws, err := e.reg.Workers(e.ctx, "")
	require.NoError(t, err)
	require.Len(t, ws, 1)
}

func TestWorkerHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w", "q")
	e.clk.Advance(45 * time.Second)
	body := map[string]any{"worker_id": "w", "task_slots": map[string]any{"session_available": 0}, "active_slots": 2, "task_queues": []string{"q"}}
	validate(t, component("WorkerHeartbeatRequest"), body)
	r := e.do(req{path: "/api/worker/heartbeat", body: body})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, response("WorkerEnvelope"), r.raw)
	require.Equal(t, true, r.body["acknowledged"])
	require.Equal(t, float64(60), r.body["stale_after_seconds"])
	require.Equal(t, "2026-11-30T05:00:45Z", r.body["last_heartbeat_at"])
	wk, err := e.reg.Worker(e.ctx, "", "w")
	require.NoError(t, err)
	require.JSONEq(t, `{"session_available":0}`, string(wk.TaskSlots))

	before := e.dump()
	r = e.do(req{path: "/api/worker/heartbeat", body: map[string]any{"worker_id": "ghost"}})
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.raw)
	require.Equal(t, ReasonWorkerNotRegistered, r.reason())
	require.Equal(t, "ghost", r.body["worker_id"])
	validate(t, response("WorkerError"), r.raw)
	require.Equal(t, before, e.dump())
}

// Deregistration removes the registration; the session it held turns
// orphaned and another worker may reacquire it.
func TestDeregister(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu", "gpu:l4")
	e.register("w2", "gpu", "gpu:l4")
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s"}}).status)

	r := e.do(req{method: http.MethodDelete, path: "/api/worker/registrations/w1"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	validate(t, response("WorkerDeregistrationEnvelope"), r.raw)
	require.Equal(t, "deregistered", r.body["outcome"])
	_, err := e.reg.Worker(e.ctx, "", "w1")
	require.Error(t, err)

	show := e.do(req{method: http.MethodGet, path: "/api/worker-sessions/s"})
	require.Equal(t, "orphaned", show.obj("session")["status"])
	r = e.do(req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w2", "session_id": "s"}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
	require.Equal(t, "reacquired", r.body["outcome"])

	r = e.do(req{method: http.MethodDelete, path: "/api/worker/registrations/w1"})
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.raw)
	require.Equal(t, ReasonWorkerNotRegistered, r.reason())
}
