// Package httpapi is queuety-go's HTTP surface for external workers and
// operators, shaped after durable-workflow's server so its worker protocol
// (worker-protocol-api.openapi.yaml) and runtime schemas validate our bodies.
//
// Three planes, each with its own bearer token:
//
//   - worker plane (/api/worker/...): registration, registration heartbeat,
//     worker-session lifecycle, and activity tasks (a task is a Queuety job;
//     task_id is the job id, activity_attempt_id is "<job id>.<attempt>").
//     Every request must send X-Durable-Workflow-Protocol-Version: 1.N with
//     the advertised major and a minor no newer than ours; every response,
//     refusals included, carries the same header and the envelope fields
//     protocol_version and server_capabilities.
//   - operator plane (/api/worker-sessions, /api/system/operator-metrics):
//     sends and gets back X-Durable-Workflow-Control-Plane-Version: 2.
//   - GET /api/cluster/info, readable with either token, publishes the
//     worker protocol version and the worker-session and local-activity
//     runtime contracts.
//
// Namespaces come from X-Namespace ("default" when absent).
//
// Refusals are JSON with a machine-readable reason: unauthorized (401),
// forbidden (403, the other plane's token), missing_protocol_version and
// unsupported_protocol_version (400), invalid_json (400), payload_too_large
// (413), validation_failed (422, errors keyed by field), the worker-session
// reason codes of the runtime schema, and the task codes (task_not_found,
// task_mismatch, stale_attempt, ...). A refused request changes no row.
//
// The protocol fence: sessions need worker protocol 1.8. With the default
// advertised 1.13 the server's capabilities always advertise them (the
// OpenAPI's WorkerServerCapabilities requires the three verbs), and a
// request that declares a version below 1.8 is refused on the session
// routes with worker_sessions_unavailable and polls only jobs that are not
// bound to a session. A server configured to advertise a version below 1.8
// advertises no verbs and worker_sessions.supported=false everywhere.
package httpapi
