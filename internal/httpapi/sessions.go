package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// maxSessionIDLength is the schema's (and worker_sessions.session_id's).
const maxSessionIDLength = 255

// optionKeys are the worker_session option fields of a create body.
var optionKeys = []string{
	"session_id", "connection", "queue", "requirements", "lease_seconds", "ttl_seconds",
	"max_concurrent_activities", "create_if_missing", "allow_reacquire_after_failure",
}

// sessionError is a refusal in workerSessionOperationResult's shape (so it
// validates as both that and WorkerError).
func sessionError(reason, msg string) *apiError {
	return refuse(sessions.HTTPStatus(reason), reason, msg,
		field{"admitted", false}, field{"status", sessions.HTTPStatus(reason)})
}

// fence refuses session routes to a request below protocol 1.8 (or to
// every request when we advertise less than that), spec §1.14.
func (s *Server) fence(rq *request) *apiError {
	if s.sessionsOK(rq) {
		return nil
	}
	return refuse(http.StatusConflict, ReasonSessionsUnavailable,
		fmt.Sprintf("Worker sessions need worker protocol %s or newer; this request uses %s.", SessionsMinimumVersion, rq.version),
		field{"supported", false},
		field{"supported_version", s.advertise.String()},
		field{"requested_version", rq.version.String()},
		field{"minimum_protocol_version", SessionsMinimumVersion},
		field{"remediation", fmt.Sprintf("Send %s: %s (or newer) to use worker sessions, or drop worker_session from this worker's work.", HeaderWorkerProtocol, s.advertise)})
}

// createSession is POST /api/worker/sessions: an explicit create (or
// reuse, or reacquire) before the worker polls.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	if e := s.fence(rq); e != nil {
		return e
	}
	f, errs, e := s.readFields(w, r)
	if e != nil {
		return e
	}
	workerID := s.workerIDField(f)
	// The option fields: lengths here (the schema's 255), types and the
	// library's messages in sessions.ParseOptions.
	opts := phpjson.NewObject()
	for _, k := range optionKeys {
		v, ok := f.any(k)
		if !ok {
			continue
		}
		opts.Set(k, v)
		switch k {
		case "session_id", "connection", "queue":
			if str, isStr := v.AsString(); isStr && utf8.RuneCountInString(str) > maxSessionIDLength {
				f.fail(k, fmt.Sprintf("must not be greater than %d characters", maxSessionIDLength))
			}
		case "requirements":
			if list, isList := v.AsList(); isList {
				for i, item := range list {
					if str, isStr := item.AsString(); isStr && utf8.RuneCountInString(str) > 255 {
						f.fail(fmt.Sprintf("requirements.%d", i), "must not be greater than 255 characters")
					}
				}
			}
		}
	}
	f.done()
	id, hasID := f.obj.Get("session_id")
	idStr, idIsStr := id.AsString()
	switch {
	case !hasID || id.IsNull():
		f.required("session_id")
	case !idIsStr:
		f.fail("session_id", "must be a string")
	}
	var o sessions.Options
	blankID := idIsStr && blank(idStr)
	if hasID && idIsStr && !blankID {
		parsed, err := sessions.ParseOptions(phpjson.ObjectValue(opts))
		var ve *sessions.ValidationError
		switch {
		case errors.As(err, &ve):
			for _, fe := range ve.Errors {
				key := fe.Field
				if key == "" {
					key = "worker_session"
				}
				errs.add(key, fe.Message)
			}
		case err != nil:
			return internal(err)
		}
		o = parsed
	}
	if !errs.empty() {
		return errs.validation()
	}
	if blankID {
		return sessionError(sessions.ReasonInvalidWorkerSession, "Worker session id must be a non-empty string.")
	}
	res, err := s.cfg.Registry.Create(r.Context(), rq.ns, workerID, o)
	return s.writeResult(w, res, err, workerID, o.SessionID)
}

// workerIDField reads the required worker_id of a session body.
func (s *Server) workerIDField(f *fields) string {
	id, ok := f.str("worker_id", true, 255)
	if ok {
		if err := sessions.ValidateWorkerID(id); err != nil {
			f.errs.add("worker_id", workerIDMessage(err))
		}
	}
	return id
}

// sessionPathID reads and checks {sessionId}; a blank one is
// invalid_worker_session, as a blank body session_id is.
func sessionPathID(r *http.Request) (string, *apiError) {
	raw := r.PathValue("sessionId")
	id := phpjson.Trim(raw)
	if id == "" {
		return "", sessionError(sessions.ReasonInvalidWorkerSession, "The worker session id in the path is empty.")
	}
	if utf8.RuneCountInString(raw) > maxSessionIDLength {
		var fe fieldErrors
		fe.add("session_id", fmt.Sprintf("The session id field must not be greater than %d characters.", maxSessionIDLength))
		return "", fe.validation()
	}
	return id, nil
}

// openSession starts the routes of one session: the protocol fence, the
// session id of the path, and the body with its worker_id.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request, rq *request) (id, workerID string, f *fields, errs *fieldErrors, e *apiError) {
	if e = s.fence(rq); e != nil {
		return
	}
	if id, e = sessionPathID(r); e != nil {
		return
	}
	if f, errs, e = s.readFields(w, r); e != nil {
		return
	}
	return id, s.workerIDField(f), f, errs, nil
}

// heartbeatSession is POST /api/worker/sessions/{sessionId}/heartbeat.
func (s *Server) heartbeatSession(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	id, workerID, f, errs, e := s.openSession(w, r, rq)
	if e != nil {
		return e
	}
	lease := f.intPtr("lease_seconds", 1, 1<<31-1)
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	res, err := s.cfg.Registry.HeartbeatSession(r.Context(), rq.ns, id, workerID, lease)
	return s.writeResult(w, res, err, workerID, id)
}

// closeSession is DELETE /api/worker/sessions/{sessionId} with {worker_id}.
func (s *Server) closeSession(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	id, workerID, f, errs, e := s.openSession(w, r, rq)
	if e != nil {
		return e
	}
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	res, err := s.cfg.Registry.Close(r.Context(), rq.ns, id, workerID)
	return s.writeResult(w, res, err, workerID, id)
}

// writeResult writes a registry result with its own HTTP status. The
// registry reports "no such session" and "no such worker" as results; the
// errors are mapped the same way in case a path returns them instead.
func (s *Server) writeResult(w http.ResponseWriter, res sessions.Result, err error, workerID, sessionID string) *apiError {
	switch {
	case errors.Is(err, sessions.ErrSessionNotFound):
		return sessionError(sessions.ReasonSessionNotFound, fmt.Sprintf("Worker session [%s] not found.", sessionID))
	case errors.Is(err, sessions.ErrWorkerNotRegistered):
		e := sessionError(sessions.ReasonWorkerNotRegistered, "Worker not registered. Call POST /api/worker/register first.")
		e.extra = append(e.extra, field{"worker_id", workerID})
		return e
	case err != nil:
		return internal(err)
	}
	status := res.Status
	if status == 0 {
		status = sessions.HTTPStatus(res.Reason)
	}
	s.writeWorker(w, status, res)
	return nil
}
