package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Headers of the two protocols.
const (
	HeaderWorkerProtocol = "X-Durable-Workflow-Protocol-Version"
	HeaderControlPlane   = "X-Durable-Workflow-Control-Plane-Version"
	HeaderNamespace      = "X-Namespace"

	// ControlPlaneVersion is the only control-plane version we speak.
	ControlPlaneVersion = "2"
	// DefaultAdvertisedVersion is the worker protocol we advertise: the
	// version the copied OpenAPI pins (spec ⚠6).
	DefaultAdvertisedVersion = "1.13"
	// SessionsMinimumVersion is the first worker protocol with sessions.
	SessionsMinimumVersion = "1.8"
	// DefaultNamespace is used when a request sends no X-Namespace.
	DefaultNamespace = "default"
)

// Reason codes of refusals that are not worker-session results.
const (
	ReasonUnauthorized               = "unauthorized"
	ReasonForbidden                  = "forbidden"
	ReasonMissingProtocolVersion     = "missing_protocol_version"
	ReasonUnsupportedProtocolVersion = "unsupported_protocol_version"
	ReasonMissingControlPlane        = "missing_control_plane_version"
	ReasonUnsupportedControlPlane    = "unsupported_control_plane_version"
	ReasonInvalidNamespace           = "invalid_namespace"
	ReasonInvalidJSON                = "invalid_json"
	ReasonPayloadTooLarge            = "payload_too_large"
	ReasonValidationFailed           = "validation_failed"
	ReasonInvalidWorkerSession       = "invalid_worker_session"
	ReasonWorkerNotRegistered        = "worker_not_registered"
	ReasonSessionNotFound            = "session_not_found"
	ReasonSessionsUnavailable        = "worker_sessions_unavailable"
	ReasonWorkerSessionNotFound      = "worker_session_not_found"
	ReasonTaskQueueMismatch          = "task_queue_mismatch"
	ReasonTaskNotFound               = "task_not_found"
	ReasonAttemptNotFound            = "attempt_not_found"
	ReasonTaskMismatch               = "task_mismatch"
	ReasonTasksUnavailable           = "activity_tasks_unavailable"
	ReasonRouteNotFound              = "route_not_found"
	ReasonMethodNotAllowed           = "method_not_allowed"
	ReasonInternalError              = "internal_error"
)

// version is a worker protocol version "major.minor".
type version struct{ major, minor int }

func (v version) String() string { return strconv.Itoa(v.major) + "." + strconv.Itoa(v.minor) }

// less reports whether v is older than o.
func (v version) less(o version) bool {
	return v.major < o.major || v.major == o.major && v.minor < o.minor
}

// parseVersion accepts exactly digits "." digits, as the SDKs' ^\d+\.\d+$
// does; leading zeros ("1.08") are refused so one version has one spelling.
func parseVersion(s string) (version, bool) {
	maj, min, ok := strings.Cut(s, ".")
	a, okA := digits(maj)
	b, okB := digits(min)
	if !ok || !okA || !okB {
		return version{}, false
	}
	return version{a, b}, true
}

func digits(s string) (int, bool) {
	if s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// field is one key of an ordered JSON object.
type field struct {
	k string
	v any
}

// object is a JSON object that keeps its key order, so responses read in
// the order the spec lists their fields.
type object []field

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// with returns o plus more fields.
func (o object) with(more ...field) object { return append(append(object(nil), o...), more...) }

// marshal is json.Marshal without HTML escaping: our bodies carry handler
// names and messages that should read as written.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// splice appends fields to the JSON object b (the marshaled form of a
// type we do not own, such as a session result) without decoding it, so
// its own key order and number spelling stay as they are.
func splice(b []byte, more object) ([]byte, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("httpapi: response body is not a JSON object: %.40s", b)
	}
	if len(more) == 0 {
		return b, nil
	}
	extra, err := marshal(more)
	if err != nil {
		return nil, err
	}
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	out := make([]byte, 0, len(b)+len(extra))
	out = append(out, '{')
	out = append(out, inner...)
	if len(inner) > 0 {
		out = append(out, ',')
	}
	out = append(out, extra[1:]...)
	return out, nil
}

// apiError is a refusal: an HTTP status, a reason code, a message, and
// optional extra fields (the field errors of a validation failure, the
// worker id of worker_not_registered, ...).
type apiError struct {
	status int
	reason string
	msg    string
	extra  object
	cause  error // logged, never sent
}

func (e *apiError) Error() string { return e.reason + ": " + e.msg }

func refuse(status int, reason, msg string, extra ...field) *apiError {
	return &apiError{status: status, reason: reason, msg: msg, extra: extra}
}

// fieldErrors are validation messages keyed by field, in the order found.
type fieldErrors struct {
	keys []string
	msgs map[string][]string
}

func (f *fieldErrors) add(key, msg string) {
	if f.msgs == nil {
		f.msgs = map[string][]string{}
	}
	if _, ok := f.msgs[key]; !ok {
		f.keys = append(f.keys, key)
	}
	f.msgs[key] = append(f.msgs[key], msg)
}

func (f *fieldErrors) empty() bool { return len(f.keys) == 0 }

func (f *fieldErrors) has(key string) bool { _, ok := f.msgs[key]; return ok }

func (f *fieldErrors) object() object {
	o := make(object, 0, len(f.keys))
	for _, k := range f.keys {
		o = append(o, field{k, f.msgs[k]})
	}
	return o
}

// validation is the 422 of a body that broke the rules, in Laravel's shape
// (the server's): a summary message, and the same errors under errors and
// validation_errors.
func (f *fieldErrors) validation() *apiError {
	first := f.msgs[f.keys[0]][0]
	msg := first
	if n := len(f.keys) - 1; n > 0 {
		msg = fmt.Sprintf("%s (and %d more error%s)", first, n, plural(n))
	}
	errs := f.object()
	return refuse(http.StatusUnprocessableEntity, ReasonValidationFailed, msg,
		field{"errors", errs}, field{"validation_errors", errs})
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
