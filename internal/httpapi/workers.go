package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// maxQueueLength is jobs.queue's width: a queue name longer than that
// could never match a job.
const maxQueueLength = 64

// runtimeExternal is the runtime of a registration that names none (the
// OpenAPI's request shape has no runtime field).
const runtimeExternal = "external"

// register is POST /api/worker/register. It accepts both request shapes
// (spec ⚠1): the OpenAPI's {worker_id, task_queues[], workflow_types,
// activity_types} and the server's {worker_id?, task_queue, runtime,
// supported_*_types, capabilities, max_concurrent_worker_sessions,
// task_slots, process_metrics, heartbeat_interval_seconds, ...}, and
// answers 201 with the server's body.
func (s *Server) register(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, e := s.readFields(w, r)
	if e != nil {
		return e
	}
	reg := sessions.Registration{Namespace: rq.ns}

	if id, ok := f.str("worker_id", false, 255); ok {
		if err := sessions.ValidateWorkerID(id); err != nil {
			errs.add("worker_id", workerIDMessage(err))
		}
		reg.WorkerID = id
	}
	// No worker_id (or null): the registry generates a ULID, as the server does.
	if q, ok := f.queue("task_queue"); ok {
		reg.TaskQueue = q
	}
	if qs, ok := f.queues("task_queues"); ok {
		reg.Queues = qs
	}
	if reg.TaskQueue == "" && len(reg.Queues) == 0 && !errs.has("task_queue") && !hasPrefix(errs, "task_queues") {
		f.fail("task_queue", "is required (send task_queue, or task_queues with at least one queue)")
	}
	reg.Runtime = runtimeExternal
	if rt, ok := f.str("runtime", false, 32); ok {
		if !slices.Contains(sessions.Runtimes, rt) {
			f.fail("runtime", fmt.Sprintf("must be one of %v", sessions.Runtimes))
		}
		reg.Runtime = rt
	}
	if v, ok := f.str("sdk_version", false, 64); ok {
		reg.SDKVersion = v
	}
	if v, ok := f.str("build_id", false, 191); ok {
		reg.BuildID = v
	}
	// Accepted so real SDKs can register; queuety-go routes tasks by
	// queue, so the type lists and fingerprints are not stored.
	for _, k := range []string{"supported_workflow_types", "supported_activity_types", "workflow_types", "activity_types"} {
		f.strings(k, 255)
	}
	f.stringMap("workflow_definition_fingerprints")
	f.integer("max_concurrent_workflow_tasks", false, 1, 0)
	f.integer("max_concurrent_activity_tasks", false, 1, 0)
	if caps, ok := f.stringList("capabilities", 255, true); ok {
		if err := sessions.CheckCapabilities(caps); err != nil {
			f.fail("capabilities", fmt.Sprintf("must take at most %d bytes in all (%v)", sessions.MaxCapabilitiesBytes, err))
		}
		reg.Capabilities = caps
	}
	// 0 registers a worker that holds no sessions (the registry refuses it
	// every session with worker_session_limit_exceeded).
	reg.MaxConcurrentWorkerSessions = f.intPtr("max_concurrent_worker_sessions", 0, 1_000_000)
	if n := f.intPtr("heartbeat_interval_seconds", 1, 3600); n != nil {
		reg.HeartbeatIntervalSeconds = *n
	}
	reg.TaskSlots = taskSlots(f)
	reg.ProcessMetrics = processMetrics(f)
	f.done()
	if !errs.empty() {
		return errs.validation()
	}

	wk, err := s.cfg.Registry.Register(r.Context(), reg)
	if err != nil {
		if errors.Is(err, sessions.ErrInvalidRegistration) || errors.Is(err, sessions.ErrInvalidWorkerID) {
			var fe fieldErrors
			fe.add("registration", err.Error())
			return fe.validation()
		}
		return internal(err)
	}
	s.writeWorker(w, http.StatusCreated, s.workerBody(wk, field{"registered", true}))
	return nil
}

// workerBody is the server's registration body, plus what queuety-go
// adds (every queue served, the session limit).
func (s *Server) workerBody(wk sessions.Worker, lead ...field) object {
	queues := wk.Queues
	if len(queues) == 0 {
		queues = []string{wk.TaskQueue}
	}
	caps := wk.Capabilities
	if caps == nil {
		caps = []string{}
	}
	o := object{{"worker_id", wk.WorkerID}}
	o = append(o, lead...)
	return append(o,
		field{"namespace", wk.Namespace},
		field{"task_queue", wk.TaskQueue},
		field{"task_queues", queues},
		field{"runtime", wk.Runtime},
		field{"sdk_version", nilIfEmpty(wk.SDKVersion)},
		field{"build_id", nilIfEmpty(wk.BuildID)},
		field{"capabilities", caps},
		field{"max_concurrent_worker_sessions", wk.MaxConcurrentWorkerSessions},
		field{"status", wk.Status},
		field{"heartbeat_interval_seconds", wk.HeartbeatIntervalSeconds},
		field{"stale_after_seconds", int(s.cfg.StaleAfter / time.Second)},
		field{"last_heartbeat_at", timeOrNil(wk.LastHeartbeatAt)},
	)
}

// heartbeatWorker is POST /api/worker/heartbeat: the registration
// heartbeat that keeps a worker's sessions from turning orphaned.
func (s *Server) heartbeatWorker(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, e := s.readFields(w, r)
	if e != nil {
		return e
	}
	id, ok := f.str("worker_id", true, 255)
	if ok {
		if err := sessions.ValidateWorkerID(id); err != nil {
			errs.add("worker_id", workerIDMessage(err))
		}
	}
	slots := taskSlots(f)
	metrics := processMetrics(f)
	// The OpenAPI's heartbeat fields and the server's interval are
	// accepted; the interval is set at registration, so it is not changed
	// here (the response says which one is in force).
	f.queues("task_queues")
	f.integer("active_slots", false, 0, 0)
	f.integer("heartbeat_interval_seconds", false, 1, 3600)
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	wk, err := s.cfg.Registry.Heartbeat(r.Context(), rq.ns, id, slots, metrics)
	if err != nil {
		if errors.Is(err, sessions.ErrWorkerNotRegistered) {
			return notRegistered(http.StatusNotFound, id)
		}
		return internal(err)
	}
	s.writeWorker(w, http.StatusOK, object{
		{"worker_id", wk.WorkerID},
		{"acknowledged", true},
		{"status", wk.Status},
		{"heartbeat_interval_seconds", wk.HeartbeatIntervalSeconds},
		{"stale_after_seconds", int(s.cfg.StaleAfter / time.Second)},
		{"last_heartbeat_at", timeOrNil(wk.LastHeartbeatAt)},
	})
	return nil
}

// deregister is DELETE /api/worker/registrations/{workerId}: a graceful
// goodbye. Sessions the worker still holds turn orphaned (reacquirable);
// a worker that wants them ended closes them first.
func (s *Server) deregister(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	id := r.PathValue("workerId")
	if err := sessions.ValidateWorkerID(id); err != nil {
		var fe fieldErrors
		fe.add("worker_id", workerIDMessage(err))
		return fe.validation()
	}
	if err := s.cfg.Registry.Deregister(r.Context(), rq.ns, id); err != nil {
		if errors.Is(err, sessions.ErrWorkerNotRegistered) {
			return notRegistered(http.StatusNotFound, id)
		}
		return internal(err)
	}
	s.writeWorker(w, http.StatusOK, object{
		{"worker_id", id},
		{"outcome", "deregistered"},
		// queuety-go has no workflow-task leases to hand back; a worker's
		// jobs are rescued by their own leases.
		{"recovered_workflow_task_count", 0},
	})
	return nil
}

func notRegistered(status int, id string) *apiError {
	return refuse(status, ReasonWorkerNotRegistered,
		"Worker not registered. Call POST /api/worker/register first.",
		field{"worker_id", id})
}

// taskSlots reads the optional task_slots object (known keys only) and
// returns it as JSON for the registry.
func taskSlots(f *fields) []byte {
	n, ok := f.nested("task_slots")
	if !ok {
		return nil
	}
	for _, k := range []string{"workflow_available", "activity_available", "session_available"} {
		n.integer(k, false, 0, 0)
	}
	n.done()
	return encodeObject(n.obj)
}

// processMetrics reads the optional process_metrics object.
func processMetrics(f *fields) []byte {
	n, ok := f.nested("process_metrics")
	if !ok {
		return nil
	}
	n.number("cpu_percent", 0)
	n.integer("memory_bytes", false, 0, 0)
	n.number("process_uptime_seconds", 0)
	n.integer("process_id", false, 0, 0)
	n.str("host", false, 255)
	n.str("process_started_at", false, 64)
	n.done()
	return encodeObject(n.obj)
}

func encodeObject(o *phpjson.Object) []byte {
	b, err := phpjson.Encode(phpjson.ObjectValue(o))
	if err != nil {
		return nil // only invalid UTF-8, which Decode already refused
	}
	return b
}

func workerIDMessage(err error) string {
	return "The worker id field must be 1 to 64 printable characters (" + err.Error() + ")."
}

func blank(s string) bool { return phpjson.Trim(s) == "" }

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// hasPrefix reports whether any error is keyed key or key.<n>.
func hasPrefix(errs *fieldErrors, key string) bool {
	for _, k := range errs.keys {
		if k == key || len(k) > len(key) && k[:len(key)+1] == key+"." {
			return true
		}
	}
	return false
}
