package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// listSessions is GET /api/worker-sessions: every session of the
// namespace (refreshed first) with counts per status.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	v, err := s.cfg.Registry.List(r.Context(), rq.ns)
	if err != nil {
		return internal(err)
	}
	s.writeOperator(w, http.StatusOK, v)
	return nil
}

// showSession is GET /api/worker-sessions/{sessionId}.
func (s *Server) showSession(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	id := phpjson.Trim(r.PathValue("sessionId"))
	notFound := refuse(http.StatusNotFound, ReasonWorkerSessionNotFound,
		fmt.Sprintf("Worker session [%s] not found in namespace [%s].", id, rq.ns))
	if id == "" || utf8.RuneCountInString(id) > maxSessionIDLength {
		return notFound
	}
	snap, err := s.cfg.Registry.Get(r.Context(), rq.ns, id)
	if err != nil {
		if errors.Is(err, sessions.ErrSessionNotFound) {
			return notFound
		}
		return internal(err)
	}
	s.writeOperator(w, http.StatusOK, object{{"namespace", rq.ns}, {"session", snap}})
	return nil
}

// operatorMetrics is GET /api/system/operator-metrics: the runtime's
// metrics (activities.local, ...) plus worker_sessions by status.
func (s *Server) operatorMetrics(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	m := map[string]any{}
	if s.cfg.Metrics != nil {
		got, err := s.cfg.Metrics.OperatorMetrics(r.Context(), rq.ns)
		if err != nil {
			return internal(err)
		}
		for k, v := range got {
			m[k] = v
		}
	}
	sm, err := s.cfg.Registry.Metrics(r.Context(), rq.ns)
	if err != nil {
		return internal(err)
	}
	m["worker_sessions"] = sm
	s.writeOperator(w, http.StatusOK, object{{"namespace", rq.ns}, {"operator_metrics", m}})
	return nil
}

// clusterInfo is GET /api/cluster/info (either token, no protocol header:
// it is how a client learns the versions). worker_protocol.version is the
// "1.N" string the OpenAPI and the SDKs use (spec ⚠2).
func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	body := object{
		{"server_id", s.cfg.ServerID},
		{"product", "queuety-go"},
		{"version", s.cfg.Version},
		{"default_namespace", DefaultNamespace},
		{"namespace", rq.ns},
		{"capabilities", object{
			{"activity_tasks", s.cfg.Tasks != nil},
			{"worker_sessions", s.sessionsAvailable()},
			{"local_activities", true},
		}},
		{"limits", object{{"max_payload_bytes", s.cfg.MaxBodyBytes}}},
		{"control_plane", object{{"version", ControlPlaneVersion}, {"header", HeaderControlPlane}}},
		{"worker_protocol", object{
			{"version", s.advertise.String()},
			{"header", HeaderWorkerProtocol},
			{"minimum_version", fmt.Sprintf("%d.0", s.advertise.major)},
			{"server_capabilities", s.caps},
		}},
	}
	b, err := marshal(body)
	if err != nil {
		return internal(err)
	}
	write(w, http.StatusOK, b)
	return nil
}
