package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every kind of bad request is refused with its status and reason code,
// in the plane's shape, and changes nothing: the rows of workers,
// worker_sessions and jobs are the same before and after, and the task
// source is never called.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu-activities", "gpu:nvidia-l4")
	require.Equal(t, http.StatusCreated, e.do(req{path: "/api/worker/sessions", body: gpuCreate("w1", "held")}).status)

	long := strings.Repeat("x", 65)
	huge := `{"worker_id":"w1","task_queue":"q","sdk_version":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`
	complete := func(taskPath string, body map[string]any) req {
		return req{path: "/api/worker/activity-tasks/" + taskPath + "/complete", body: body}
	}
	okAttempt := map[string]any{"activity_attempt_id": "7.1", "lease_owner": "w1"}
	// 10,000 short capabilities: each is within bounds, together they are
	// about 90 KB stored, more than the TEXT column (this was a 500).
	manyCaps := make([]string, 10000)
	for i := range manyCaps {
		manyCaps[i] = fmt.Sprintf("cap:%04d", i)
	}

	cases := []struct {
		name   string
		q      req
		status int
		reason string
		field  string // the errors key of a validation failure
	}{
		// headers and tokens
		{"no protocol header", req{path: "/api/worker/register", version: "-", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonMissingProtocolVersion, ""},
		{"malformed protocol", req{path: "/api/worker/register", version: "1.x", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonUnsupportedProtocolVersion, ""},
		{"other major", req{path: "/api/worker/register", version: "2.0", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonUnsupportedProtocolVersion, ""},
		{"newer minor", req{path: "/api/worker/register", version: "1.14", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonUnsupportedProtocolVersion, ""},
		{"zero-padded", req{path: "/api/worker/register", version: "1.013", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonUnsupportedProtocolVersion, ""},
		{"no token", req{path: "/api/worker/register", noToken: true, body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 401, ReasonUnauthorized, ""},
		{"basic scheme", req{path: "/api/worker/register", auth: "Basic " + workerToken, body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 401, ReasonUnauthorized, ""},
		{"scheme without token", req{path: "/api/worker/register", auth: "Bearer", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 401, ReasonUnauthorized, ""},
		{"wrong token", req{path: "/api/worker/register", token: "guess", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 401, ReasonUnauthorized, ""},
		{"operator token on worker plane", req{path: "/api/worker/register", token: operatorToken, body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 403, ReasonForbidden, ""},
		{"worker token on operator plane", req{method: "GET", path: "/api/worker-sessions", token: workerToken}, 403, ReasonForbidden, ""},
		{"no control-plane header", req{method: "GET", path: "/api/worker-sessions", controlPlane: "-"}, 400, ReasonMissingControlPlane, ""},
		{"wrong control-plane version", req{method: "GET", path: "/api/system/operator-metrics", controlPlane: "1"}, 400, ReasonUnsupportedControlPlane, ""},
		{"bad namespace", req{path: "/api/worker/register", namespace: "no spaces!", body: map[string]any{"worker_id": "x", "task_queue": "q"}}, 400, ReasonInvalidNamespace, ""},
		// bodies
		{"not JSON", req{path: "/api/worker/register", body: `{"worker_id":`}, 400, ReasonInvalidJSON, ""},
		{"not an object", req{path: "/api/worker/register", body: `[1,2]`}, 422, ReasonValidationFailed, "body"},
		{"oversize", req{path: "/api/worker/register", body: huge}, 413, ReasonPayloadTooLarge, ""},
		{"register: unknown field", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": "q", "colour": "red"}}, 422, ReasonValidationFailed, "colour"},
		{"register: wrong type", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": 5}}, 422, ReasonValidationFailed, "task_queue"},
		{"register: empty id", req{path: "/api/worker/register", body: map[string]any{"worker_id": "", "task_queue": "q"}}, 422, ReasonValidationFailed, "worker_id"},
		{"register: id over 64", req{path: "/api/worker/register", body: map[string]any{"worker_id": long, "task_queue": "q"}}, 422, ReasonValidationFailed, "worker_id"},
		{"register: NUL in id", req{path: "/api/worker/register", body: map[string]any{"worker_id": "a\x00b", "task_queue": "q"}}, 422, ReasonValidationFailed, "worker_id"},
		{"register: newline in id", req{path: "/api/worker/register", body: map[string]any{"worker_id": "a\nb", "task_queue": "q"}}, 422, ReasonValidationFailed, "worker_id"},
		{"register: escape in id", req{path: "/api/worker/register", body: map[string]any{"worker_id": "a\x1b[2Jb", "task_queue": "q"}}, 422, ReasonValidationFailed, "worker_id"},
		{"register: capabilities over their column", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": "q", "capabilities": manyCaps}}, 422, ReasonValidationFailed, "capabilities"},
		{"register: no queue", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x"}}, 422, ReasonValidationFailed, "task_queue"},
		{"register: empty queue list", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queues": []string{}}}, 422, ReasonValidationFailed, "task_queue"},
		{"register: bad runtime", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": "q", "runtime": "cobol"}}, 422, ReasonValidationFailed, "runtime"},
		{"register: interval 0", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": "q", "heartbeat_interval_seconds": 0}}, 422, ReasonValidationFailed, "heartbeat_interval_seconds"},
		{"register: float limit", req{path: "/api/worker/register", body: `{"worker_id":"x","task_queue":"q","max_concurrent_worker_sessions":1.5}`}, 422, ReasonValidationFailed, "max_concurrent_worker_sessions"},
		{"register: unknown slot", req{path: "/api/worker/register", body: map[string]any{"worker_id": "x", "task_queue": "q", "task_slots": map[string]any{"gpu_available": 1}}}, 422, ReasonValidationFailed, "task_slots.gpu_available"},
		{"heartbeat: null id", req{path: "/api/worker/heartbeat", body: `{"worker_id":null}`}, 422, ReasonValidationFailed, "worker_id"},
		{"create: misspelt option", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "lease_second": 60}}, 422, ReasonValidationFailed, "lease_second"},
		{"create: lease as string", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "lease_seconds": "120"}}, 422, ReasonValidationFailed, "lease_seconds"},
		{"create: lease 0", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "lease_seconds": 0}}, 422, ReasonValidationFailed, "lease_seconds"},
		// Above the INT UNSIGNED columns' range (these were 500s); json.Marshal
		// writes 5e9 as the integer 5000000000, and a literal exponent is a
		// PHP float, refused as not an int.
		{"create: lease 5e9", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "lease_seconds": 5e9}}, 422, ReasonValidationFailed, "lease_seconds"},
		{"create: ttl 9e12", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "ttl_seconds": 9e12}}, 422, ReasonValidationFailed, "ttl_seconds"},
		{"create: max over int32", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "max_concurrent_activities": 1 << 31}}, 422, ReasonValidationFailed, "max_concurrent_activities"},
		{"create: lease exponent literal", req{path: "/api/worker/sessions", body: `{"worker_id":"w1","session_id":"s","lease_seconds":5e9}`}, 422, ReasonValidationFailed, "lease_seconds"},
		{"create: requirements not a list", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "requirements": "gpu"}}, 422, ReasonValidationFailed, "requirements"},
		{"create: blank requirement", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "requirements": []string{"gpu", " "}}}, 422, ReasonValidationFailed, "requirements.1"},
		{"create: bool as string", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "create_if_missing": "yes"}}, 422, ReasonValidationFailed, "create_if_missing"},
		{"create: blank queue", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": "s", "queue": ""}}, 422, ReasonValidationFailed, "queue"},
		{"create: no session id", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1"}}, 422, ReasonValidationFailed, "session_id"},
		{"create: session id a number", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": 7}}, 422, ReasonValidationFailed, "session_id"},
		{"create: session id too long", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": strings.Repeat("s", 256)}}, 422, ReasonValidationFailed, "session_id"},
		{"create: empty session id", req{path: "/api/worker/sessions", body: map[string]any{"worker_id": "w1", "session_id": ""}}, 422, ReasonInvalidWorkerSession, ""},
		{"create: no worker id", req{path: "/api/worker/sessions", body: map[string]any{"session_id": "s"}}, 422, ReasonValidationFailed, "worker_id"},
		{"session heartbeat: negative lease", req{path: "/api/worker/sessions/held/heartbeat", body: map[string]any{"worker_id": "w1", "lease_seconds": -1}}, 422, ReasonValidationFailed, "lease_seconds"},
		{"close: extra field", req{method: "DELETE", path: "/api/worker/sessions/held", body: map[string]any{"worker_id": "w1", "force": true}}, 422, ReasonValidationFailed, "force"},
		{"close: empty body", req{method: "DELETE", path: "/api/worker/sessions/held"}, 422, ReasonValidationFailed, "worker_id"},
		{"poll: no worker", req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"task_queues": []string{"gpu-activities"}}}, 422, ReasonValidationFailed, "worker_id"},
		{"poll: negative timeout", req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "poll_timeout_seconds": -1}}, 422, ReasonValidationFailed, "poll_timeout_seconds"},
		{"poll: unregistered", req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "ghost"}}, 412, ReasonWorkerNotRegistered, ""},
		{"poll: queue not registered", req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "task_queue": "default"}}, 409, ReasonTaskQueueMismatch, ""},
		{"complete: bad attempt id", complete("7", map[string]any{"activity_attempt_id": "7", "lease_owner": "w1"}), 422, ReasonValidationFailed, "activity_attempt_id"},
		{"complete: no owner", complete("7", map[string]any{"activity_attempt_id": "7.1"}), 422, ReasonValidationFailed, "lease_owner"},
		{"complete: owners disagree", complete("7", map[string]any{"activity_attempt_id": "7.1", "lease_owner": "w1", "worker_id": "w2"}), 422, ReasonValidationFailed, "lease_owner"},
		{"complete: other task's attempt", complete("8", okAttempt), 409, ReasonTaskMismatch, ""},
		{"complete: task id not a job id", complete("abc", okAttempt), 404, ReasonTaskNotFound, ""},
		{"complete: empty task id", complete("", okAttempt), 422, ReasonValidationFailed, "task_id"},
		{"complete: unknown field", complete("7", map[string]any{"activity_attempt_id": "7.1", "lease_owner": "w1", "output": 1}), 422, ReasonValidationFailed, "output"},
		{"fail: no message", req{path: "/api/worker/activity-tasks/7/fail", body: okAttempt}, 422, ReasonValidationFailed, "message"},
		{"fail: failure without message", req{path: "/api/worker/activity-tasks/7/fail", body: map[string]any{"activity_attempt_id": "7.1", "lease_owner": "w1", "failure": map[string]any{"type": "X"}}}, 422, ReasonValidationFailed, "failure.message"},
		{"heartbeat: details a string", req{path: "/api/worker/activity-tasks/7/heartbeat", body: map[string]any{"activity_attempt_id": "7.1", "lease_owner": "w1", "details": "x"}}, 422, ReasonValidationFailed, "details"},
		// routes
		{"wrong method", req{method: "GET", path: "/api/worker/register"}, 405, ReasonMethodNotAllowed, ""},
		{"unknown route", req{path: "/api/worker/nothing-here", body: map[string]any{}}, 404, ReasonRouteNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			calls := e.tasks.snapshot()
			r := e.do(c.q)
			require.Equal(t, c.status, r.status, "%s", r.raw)
			require.Equal(t, c.reason, r.reason(), "%s", r.raw)
			if c.field != "" {
				errs, ok := r.body["errors"].(map[string]any)
				require.True(t, ok, "%s", r.raw)
				require.Contains(t, errs, c.field, "%s", r.raw)
				require.Equal(t, errs, r.body["validation_errors"])
			}
			if strings.HasPrefix(c.q.path, "/api/worker/") {
				require.Equal(t, "1.13", r.header.Get(HeaderWorkerProtocol))
				validate(t, response("WorkerError"), r.raw)
			} else {
				require.NotEmpty(t, r.body["message"])
			}
			require.Equal(t, before, e.dump(), "a refused request changes no row")
			after := e.tasks.snapshot()
			require.Equal(t, len(calls.polls), len(after.polls))
			require.Equal(t, len(calls.completions), len(after.completions))
			require.Equal(t, len(calls.failures), len(after.failures))
			require.Equal(t, len(calls.heartbeats), len(after.heartbeats))
		})
	}
}

// An accepted version below ours (1.0) passes the header check; the
// answer still carries our version.
func TestOlderProtocolMinorIsAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{path: "/api/worker/register", version: "1.0", body: map[string]any{"worker_id": "x", "task_queue": "q"}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.raw)
	require.Equal(t, "1.13", r.header.Get(HeaderWorkerProtocol))
	require.Equal(t, "1.13", r.body["protocol_version"])
}
