package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// TaskPoll asks for one job an external worker may run.
type TaskPoll struct {
	Namespace, WorkerID string
	// Queues are the queues to claim from, in priority order: what the
	// poll named, else every queue the worker registered.
	Queues []string
	// AllowSessions is false when the request's protocol is below 1.8:
	// such a worker must never be handed a session-bound job (§1.14).
	AllowSessions bool
}

// Task is a claimed job. Attempt is the job's attempt number (the fence of
// its heartbeat, completion and failure); the worker sees it as
// activity_attempt_id "<JobID>.<Attempt>".
type Task struct {
	JobID          int64
	Attempt        int
	Handler, Queue string
	Payload        []byte // JSON
	WorkflowID     *int64
	StepIndex      *int
	LeaseExpiresAt time.Time
	// WorkerSession is the session the job was admitted into, if any.
	WorkerSession *sessions.Snapshot
}

// TaskHeartbeat renews a claimed job's lease (and its session's).
type TaskHeartbeat struct {
	Namespace, WorkerID string
	JobID               int64
	Attempt             int
	Progress            []byte // JSON object, or nil
}

// TaskHeartbeatResult is what a heartbeat did. The HTTP status follows
// from it: 404 when Reason is task_not_found or attempt_not_found; the
// renewal's status (409, or 404 for session_not_found) when Renewal is set
// (the session renewal was refused; the heartbeat is then not recorded);
// 409 when Recorded is false for any other reason (the attempt is stale or
// fenced: the worker must stop); else 200, cancel requests included.
type TaskHeartbeatResult struct {
	Recorded, CanContinue, CancelRequested bool
	Reason, Error                          string
	LeaseExpiresAt                         time.Time
	Session                                *sessions.Snapshot
	Renewal                                *sessions.Result
}

// TaskCompletion reports a job's result.
type TaskCompletion struct {
	Namespace, WorkerID string
	JobID               int64
	Attempt             int
	Result              []byte // JSON, or nil for none
}

// TaskFailure reports a job's failure.
type TaskFailure struct {
	Namespace, WorkerID    string
	JobID                  int64
	Attempt                int
	Message, ExceptionType string
	NonRetryable           bool
}

// TaskOutcome is what a completion or failure did. Reason "" is 200;
// task_not_found and attempt_not_found are 404; any other reason (e.g.
// stale_attempt when the attempt was fenced, lease_owner_mismatch) is 409
// and nothing was recorded.
type TaskOutcome struct {
	Recorded      bool
	Reason, Error string
	JobStatus     string
}

// Tasks is the job runtime behind the activity-task routes.
type Tasks interface {
	Poll(ctx context.Context, p TaskPoll) (*Task, error) // nil, nil = nothing to do
	Heartbeat(ctx context.Context, h TaskHeartbeat) (TaskHeartbeatResult, error)
	Complete(ctx context.Context, c TaskCompletion) (TaskOutcome, error)
	Fail(ctx context.Context, f TaskFailure) (TaskOutcome, error)
}

// Metrics supplies operator metrics (activities.local, ...) for a
// namespace; the server adds worker_sessions.
type Metrics interface {
	OperatorMetrics(ctx context.Context, namespace string) (map[string]any, error)
}

func (s *Server) tasksAvailable() *apiError {
	if s.cfg.Tasks != nil {
		return nil
	}
	return refuse(http.StatusServiceUnavailable, ReasonTasksUnavailable,
		"This server was started without a task source, so it cannot hand out activity tasks.")
}

// pollTask is POST /api/worker/activity-tasks/poll: claim one job from
// the worker's queues, waiting up to poll_timeout_seconds (default
// Config.PollTimeout, at most 30 s) for one to appear.
func (s *Server) pollTask(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, e := s.openTaskBody(w, r)
	if e != nil {
		return e
	}
	workerID := s.workerIDField(f)
	var queues []string
	if q, ok := f.queue("task_queue"); ok {
		queues = append(queues, q)
	}
	if qs, ok := f.queues("task_queues"); ok {
		for _, q := range qs {
			if !slices.Contains(queues, q) {
				queues = append(queues, q)
			}
		}
	}
	f.str("build_id", false, 191)
	timeout := s.cfg.PollTimeout
	if n := f.integer("poll_timeout_seconds", false, 0, 0); n != nil {
		// Longer asks are clamped, not refused: the bound is ours to keep.
		timeout = min(time.Duration(*n)*time.Second, maxPollTimeout)
	}
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	unregistered := refuse(http.StatusPreconditionFailed, ReasonWorkerNotRegistered,
		"Worker must be registered before polling. Call POST /api/worker/register first.",
		field{"worker_id", workerID})
	wk, err := s.cfg.Registry.Worker(r.Context(), rq.ns, workerID)
	if err != nil {
		if errors.Is(err, sessions.ErrWorkerNotRegistered) {
			return unregistered
		}
		return internal(err)
	}
	registered := wk.Queues
	if len(registered) == 0 {
		registered = []string{wk.TaskQueue}
	}
	for _, q := range queues {
		if !slices.Contains(registered, q) {
			return refuse(http.StatusConflict, ReasonTaskQueueMismatch,
				fmt.Sprintf("Worker [%s] is registered for task queues [%s], not [%s]. Register it with that queue first.", workerID, strings.Join(registered, ", "), q),
				field{"worker_id", workerID}, field{"registered_task_queue", wk.TaskQueue},
				field{"registered_task_queues", registered}, field{"requested_task_queue", q})
		}
	}
	if len(queues) == 0 {
		queues = registered
	}
	poll := TaskPoll{Namespace: rq.ns, WorkerID: workerID, Queues: queues, AllowSessions: s.sessionsOK(rq)}
	task, err := s.longPoll(r.Context(), poll, timeout)
	if err != nil {
		if errors.Is(err, sessions.ErrWorkerNotRegistered) {
			return unregistered // deregistered while it waited
		}
		return internal(err)
	}
	if task == nil {
		s.writeWorker(w, http.StatusOK, object{{"task", nil}, {"poll_status", "empty"}})
		return nil
	}
	claim, err := taskClaim(task, workerID)
	if err != nil {
		return internal(err)
	}
	s.writeWorker(w, http.StatusOK, object{{"task", claim}, {"poll_status", "leased"}})
	return nil
}

// longPoll asks Tasks until it hands out a job, the timeout passes, the
// request goes away or the server stops. It is a wait, not business time,
// so it uses real timers rather than a business clock.
func (s *Server) longPoll(ctx context.Context, p TaskPoll, timeout time.Duration) (*Task, error) {
	deadline := time.Now().Add(timeout)
	for {
		task, err := s.cfg.Tasks.Poll(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil // the worker hung up; nothing was claimed for it
			}
			return nil, err
		}
		if task != nil {
			return task, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, s.cfg.PollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-s.quit:
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
}

// taskClaim is the task object of ActivityTaskClaim.
func taskClaim(t *Task, workerID string) (object, error) {
	payload := any(nil)
	if len(t.Payload) > 0 {
		v, err := phpjson.Decode(t.Payload)
		if err != nil {
			return nil, fmt.Errorf("job %d payload: %w", t.JobID, err)
		}
		payload = v
	}
	o := object{
		{"task_id", strconv.FormatInt(t.JobID, 10)},
		{"activity_attempt_id", attemptID(t.JobID, t.Attempt)},
		{"activity_type", t.Handler},
		{"attempt", t.Attempt},
		{"attempt_number", t.Attempt},
		{"task_queue", t.Queue},
		{"lease_owner", workerID},
		{"lease_expires_at", timeOrNil(&t.LeaseExpiresAt)},
		{"payload", payload},
	}
	if t.WorkflowID != nil {
		o = append(o, field{"workflow_id", strconv.FormatInt(*t.WorkflowID, 10)})
	}
	if t.StepIndex != nil {
		o = append(o, field{"step_index", *t.StepIndex})
	}
	if t.WorkerSession != nil {
		o = append(o, field{"worker_session", t.WorkerSession.Affinity()})
	}
	return o, nil
}

func attemptID(jobID int64, attempt int) string {
	return strconv.FormatInt(jobID, 10) + "." + strconv.Itoa(attempt)
}

func taskIDError() *apiError {
	var fe fieldErrors
	fe.add("task_id", "The task id field is required.")
	return fe.validation()
}

// attemptRef is who is acting on which attempt of which task.
type attemptRef struct {
	jobID     int64
	attempt   int
	attemptID string
	workerID  string
}

// taskRef reads {taskId} and the ownership fields every task route needs:
// activity_attempt_id ("<job id>.<attempt>"), and the worker as lease_owner
// (the server's name) or worker_id (the OpenAPI's); both may be sent if
// they agree.
func taskRef(r *http.Request, f *fields) (attemptRef, *apiError) {
	raw := r.PathValue("taskId")
	if phpjson.Trim(raw) == "" {
		return attemptRef{}, taskIDError()
	}
	jobID, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || jobID < 1 {
		return attemptRef{}, refuse(http.StatusNotFound, ReasonTaskNotFound, fmt.Sprintf("Activity task [%s] not found: task ids are job ids.", raw),
			field{"task_id", raw})
	}
	ref := attemptRef{jobID: jobID}
	owner, hasOwner := f.str("lease_owner", false, 255)
	wid, hasWID := f.str("worker_id", false, 255)
	switch {
	case hasOwner && hasWID && owner != wid:
		f.fail("lease_owner", "must equal worker_id when both are sent")
	case hasOwner:
		ref.workerID = owner
	case hasWID:
		ref.workerID = wid
	case !f.errs.has("lease_owner") && !f.errs.has("worker_id"):
		f.fail("lease_owner", "is required (send lease_owner or worker_id)")
	}
	if ref.workerID != "" {
		if err := sessions.ValidateWorkerID(ref.workerID); err != nil {
			f.errs.add("lease_owner", workerIDMessage(err))
		}
	}
	if a, ok := f.str("activity_attempt_id", true, 64); ok {
		ref.attemptID = a
		jobPart, attPart, cut := strings.Cut(a, ".")
		att, attErr := strconv.Atoi(attPart)
		if !cut || attErr != nil || att < 1 || strconv.Itoa(att) != attPart {
			f.fail("activity_attempt_id", `must be "<task id>.<attempt>", as the poll returned it`)
		} else if jobPart != raw {
			return attemptRef{}, refuse(http.StatusConflict, ReasonTaskMismatch,
				fmt.Sprintf("Activity attempt [%s] is not an attempt of task [%s].", a, raw),
				field{"task_id", raw}, field{"activity_attempt_id", a})
		}
		ref.attempt = att
	}
	return ref, nil
}

// heartbeatTask is POST /api/worker/activity-tasks/{taskId}/heartbeat.
// Progress is the OpenAPI's progress value, or the server's message,
// current, total, unit and details gathered into one object.
func (s *Server) heartbeatTask(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, ref, e := s.openTask(w, r)
	if e != nil {
		return e
	}
	progress := phpjson.NewObject()
	if v, ok := f.any("progress"); ok && !v.IsNull() {
		progress.Set("progress", v)
	}
	if m, ok := f.str("message", false, 0); ok {
		progress.Set("message", phpjson.String(m))
	}
	for _, k := range []string{"current", "total"} {
		f.number(k, -1e308)
		if v, ok := f.value(k); ok && v.Kind() == phpjson.KindNumber {
			progress.Set(k, v)
		}
	}
	if u, ok := f.str("unit", false, 64); ok {
		progress.Set("unit", phpjson.String(u))
	}
	if d, ok := f.value("details"); ok {
		if _, isObj := d.AsObject(); !isObj {
			if _, isList := d.AsList(); !isList {
				f.fail("details", "must be an object or a list")
			}
		}
		progress.Set("details", d)
	}
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	var prog []byte
	if progress.Len() > 0 {
		if v, ok := progress.Get("progress"); ok && progress.Len() == 1 {
			prog, _ = phpjson.Encode(v) // the OpenAPI's progress, as sent
		} else {
			prog = encodeObject(progress)
		}
	}
	res, err := s.cfg.Tasks.Heartbeat(r.Context(), TaskHeartbeat{
		Namespace: rq.ns, WorkerID: ref.workerID, JobID: ref.jobID, Attempt: ref.attempt, Progress: prog,
	})
	if err != nil {
		return internal(err)
	}
	status := http.StatusOK
	switch {
	case res.Reason == ReasonTaskNotFound || res.Reason == ReasonAttemptNotFound:
		status = http.StatusNotFound
	case res.Renewal != nil:
		status = res.Renewal.Status
		if status == 0 {
			status = sessions.HTTPStatus(res.Renewal.Reason)
		}
	case !res.Recorded:
		status = http.StatusConflict
	}
	o := object{
		{"task_id", strconv.FormatInt(ref.jobID, 10)},
		{"activity_attempt_id", ref.attemptID},
		{"lease_owner", ref.workerID},
		{"cancel_requested", res.CancelRequested},
		{"can_continue", res.CanContinue},
		{"reason", nilIfEmpty(res.Reason)},
		{"heartbeat_recorded", res.Recorded},
		{"lease_expires_at", timeOrNil(&res.LeaseExpiresAt)},
	}
	if res.Error != "" {
		o = append(o, field{"error", res.Error})
	}
	if res.Session != nil {
		o = append(o, field{"worker_session", *res.Session})
	}
	if res.Renewal != nil {
		o = append(o, field{"worker_session_renewal", object{
			{"admitted", res.Renewal.Admitted},
			{"status", status},
			{"reason", nilIfEmpty(res.Renewal.Reason)},
			{"error", res.Renewal.Error},
		}})
	}
	s.writeWorker(w, status, o)
	return nil
}

// openTaskBody starts an activity-task route: the task routes must be
// served and the body read; its fields report into the returned errors.
func (s *Server) openTaskBody(w http.ResponseWriter, r *http.Request) (*fields, *fieldErrors, *apiError) {
	if e := s.tasksAvailable(); e != nil {
		return nil, nil, e
	}
	return s.readFields(w, r)
}

// openTask is openTaskBody for the routes of one claimed task: the task
// and attempt the path and body name are parsed too.
func (s *Server) openTask(w http.ResponseWriter, r *http.Request) (*fields, *fieldErrors, attemptRef, *apiError) {
	f, errs, e := s.openTaskBody(w, r)
	if e != nil {
		return nil, nil, attemptRef{}, e
	}
	ref, e := taskRef(r, f)
	return f, errs, ref, e
}

// completeTask is POST /api/worker/activity-tasks/{taskId}/complete.
func (s *Server) completeTask(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, ref, e := s.openTask(w, r)
	if e != nil {
		return e
	}
	var result []byte
	if v, ok := f.any("result"); ok && !v.IsNull() {
		result, _ = phpjson.Encode(v) // stored as PHP would write it
	}
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	out, err := s.cfg.Tasks.Complete(r.Context(), TaskCompletion{
		Namespace: rq.ns, WorkerID: ref.workerID, JobID: ref.jobID, Attempt: ref.attempt, Result: result,
	})
	if err != nil {
		return internal(err)
	}
	s.writeOutcome(w, ref, "completed", out)
	return nil
}

// failTask is POST /api/worker/activity-tasks/{taskId}/fail. The failure
// comes flat (the OpenAPI's message, error, exception_type,
// non_retryable) or nested (the server's failure{message, type,
// non_retryable, retryable, ...}).
func (s *Server) failTask(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
	f, errs, ref, e := s.openTask(w, r)
	if e != nil {
		return e
	}
	var msg, typ string
	var nonRetryable bool
	if m, ok := f.str("message", false, 0); ok {
		msg = m
	}
	if m, ok := f.str("error", false, 0); ok && msg == "" {
		msg = m
	}
	if t, ok := f.str("exception_type", false, 255); ok {
		typ = t
	}
	if b := f.boolean("non_retryable"); b != nil {
		nonRetryable = *b
	}
	if n, ok := f.nested("failure"); ok {
		if m, ok := n.str("message", true, 0); ok {
			msg = m
		}
		if t, ok := n.str("type", false, 255); ok {
			typ = t
		}
		if b := n.boolean("non_retryable"); b != nil {
			nonRetryable = *b
		}
		if b := n.boolean("retryable"); b != nil && !*b {
			nonRetryable = true
		}
		n.str("stack_trace", false, 0)
		n.str("kind", false, 64)
		n.str("timeout_type", false, 64)
		n.boolean("cancelled")
		n.boolean("malformed_output")
		n.any("details")
		n.done()
	}
	if msg == "" && !hasPrefix(errs, "failure") && !errs.has("message") && !errs.has("error") {
		f.fail("message", "is required (send message, or failure.message)")
	}
	f.done()
	if !errs.empty() {
		return errs.validation()
	}
	out, err := s.cfg.Tasks.Fail(r.Context(), TaskFailure{
		Namespace: rq.ns, WorkerID: ref.workerID, JobID: ref.jobID, Attempt: ref.attempt,
		Message: msg, ExceptionType: typ, NonRetryable: nonRetryable,
	})
	if err != nil {
		return internal(err)
	}
	s.writeOutcome(w, ref, "failed", out)
	return nil
}

// writeOutcome writes a completion or failure outcome with its status.
func (s *Server) writeOutcome(w http.ResponseWriter, ref attemptRef, outcome string, out TaskOutcome) {
	status := http.StatusOK
	switch out.Reason {
	case "":
	case ReasonTaskNotFound, ReasonAttemptNotFound:
		status, outcome = http.StatusNotFound, "rejected"
	default:
		status, outcome = http.StatusConflict, "rejected"
	}
	o := object{
		{"task_id", strconv.FormatInt(ref.jobID, 10)},
		{"activity_attempt_id", ref.attemptID},
		{"outcome", outcome},
		{"recorded", out.Recorded},
		{"reason", nilIfEmpty(out.Reason)},
	}
	if out.Error != "" {
		o = append(o, field{"error", out.Error})
	}
	if out.JobStatus != "" {
		o = append(o, field{"job_status", out.JobStatus})
	}
	s.writeWorker(w, status, o)
}
