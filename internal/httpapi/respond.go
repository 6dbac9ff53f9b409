package httpapi

import (
	"net/http"
	"time"
)

// envelope is what every worker-plane body carries (WorkerEnvelope).
func (s *Server) envelope() object {
	return object{
		{"protocol_version", s.advertise.String()},
		{"server_capabilities", s.caps},
	}
}

// writeWorker writes a worker-plane body: body is an object, or the JSON
// of one (a registry result), to which the envelope is appended.
func (s *Server) writeWorker(w http.ResponseWriter, status int, body any) {
	var b []byte
	var err error
	switch v := body.(type) {
	case []byte:
		b, err = splice(v, s.envelope())
	case object:
		b, err = marshal(v.with(s.envelope()...))
	default:
		var raw []byte
		if raw, err = marshal(v); err == nil {
			b, err = splice(raw, s.envelope())
		}
	}
	if err != nil {
		s.log.Error("encoding a worker response", "err", err)
		status = http.StatusInternalServerError
		b, _ = marshal(object{{"error", "The server could not encode its response."}, {"reason", ReasonInternalError}}.with(s.envelope()...))
	}
	w.Header().Set(HeaderWorkerProtocol, s.advertise.String())
	write(w, status, b)
}

// writeOperator writes an operator-plane body with the control-plane
// header echoed.
func (s *Server) writeOperator(w http.ResponseWriter, status int, body any) {
	b, err := marshal(body)
	if err != nil {
		s.log.Error("encoding an operator response", "err", err)
		status = http.StatusInternalServerError
		b, _ = marshal(object{{"message", "The server could not encode its response."}, {"reason", ReasonInternalError}})
	}
	w.Header().Set(HeaderControlPlane, ControlPlaneVersion)
	write(w, status, b)
}

func write(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes a refusal in the shape of its plane: worker refusals
// are worker envelopes with error and reason; the others carry message
// and reason.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, p plane, rq *request, e *apiError) {
	if e.status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", e.cause)
	} else {
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", e.status, "reason", e.reason)
	}
	switch p {
	case planeWorker:
		body := object{{"error", e.msg}, {"reason", e.reason}}
		if e.reason == ReasonValidationFailed {
			body = object{{"message", e.msg}, {"error", e.msg}, {"reason", e.reason}}
		}
		s.writeWorker(w, e.status, body.with(e.extra...))
	case planeOperator:
		s.writeOperator(w, e.status, object{{"message", e.msg}, {"reason", e.reason}}.with(e.extra...))
	default:
		b, err := marshal(object{{"message", e.msg}, {"reason", e.reason}}.with(e.extra...))
		if err != nil {
			b = []byte(`{"reason":"internal_error"}`)
		}
		write(w, e.status, b)
	}
}

// internal is a 500 whose details go to the log, not to the caller.
func internal(err error) *apiError {
	e := refuse(http.StatusInternalServerError, ReasonInternalError, "The server failed to handle the request; its log has the cause.")
	e.cause = err
	return e
}

// rfc3339 formats a time the way the schemas' date-time fields want it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// timeOrNil is rfc3339 for optional times.
func timeOrNil(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return rfc3339(*t)
}
