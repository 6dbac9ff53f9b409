package workflow

import (
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
)

// WorkerSessionOptions are durable-workflow's WorkerSessionOptions (seed
// 000): the worker a session's steps are pinned to must be registered on
// Queue and advertise every Requirement. Zero values mean "not set": the
// snapshot writes null and the defaults apply (lease 120 s, TTL 1800 s,
// one activity at a time). A non-empty but blank string or a negative
// number is rejected with the library's message. CreateIfMissing and
// AllowReacquireAfterFailure default to true; set them with new(false).
type WorkerSessionOptions struct {
	Queue                      string
	Requirements               []string
	LeaseSeconds               int
	TTLSeconds                 int
	MaxConcurrentActivities    int
	Connection                 string
	CreateIfMissing            *bool
	AllowReacquireAfterFailure *bool
}

// Snapshot validates the options for session sessionID, with the library's
// messages, and returns the session id as jobs.session_id stores it and
// the worker_session object a bound step or job carries.
func (o WorkerSessionOptions) Snapshot(sessionID string) (id string, snapshot phpjson.Value, err error) {
	so := o.options(sessionID)
	if err := so.Validate(); err != nil {
		return "", phpjson.Value{}, err
	}
	return so.Normalize().SessionID, so.Snapshot(), nil
}

// options are the options for session id as internal/sessions holds them.
func (o WorkerSessionOptions) options(sessionID string) sessions.Options {
	out := sessions.Options{
		SessionID:                  sessionID,
		Requirements:               o.Requirements,
		CreateIfMissing:            o.CreateIfMissing,
		AllowReacquireAfterFailure: o.AllowReacquireAfterFailure,
	}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	num := func(n int) *int {
		if n == 0 {
			return nil
		}
		return &n
	}
	out.Connection, out.Queue = str(o.Connection), str(o.Queue)
	out.LeaseSeconds, out.TTLSeconds, out.MaxConcurrentActivities = num(o.LeaseSeconds), num(o.TTLSeconds), num(o.MaxConcurrentActivities)
	return out
}

// WorkerSession is a handle that adds session-bound steps (the seed's
// $session = Workflow::workerSession('gpu-render', $options);
// $session->activity(...)). Each step it adds carries a "worker_session"
// key with the options snapshot; its jobs (the single step's, every
// parallel branch's, every for_each item's) carry the session id and are
// claimed only by a worker the session admits.
//
//	b := workflow.New("render").Then("Plan")
//	b.WorkerSession("gpu-render", workflow.WorkerSessionOptions{
//		Queue: "gpu-activities", Requirements: []string{"gpu:nvidia-l4"},
//	}).Then("RenderFrames").Then("AssembleManifest")
//	b.Then("Publish")
//
// A session-bound job runs on the step's own queue when the definition
// gives one, else on the session's queue, else on the workflow's.
type WorkerSession struct {
	b        *Builder
	snapshot phpjson.Value
}

// WorkerSession validates the options (failing the builder with the
// library's message, as PHP's WorkerSessionOptions constructor throws) and
// returns the handle that binds steps to session sessionID.
func (b *Builder) WorkerSession(sessionID string, opts WorkerSessionOptions) *WorkerSession {
	s := &WorkerSession{b: b}
	if !b.ok() {
		return s
	}
	_, snapshot, err := opts.Snapshot(sessionID)
	if err != nil {
		b.fail("worker_session", InvalidArgumentException, err.Error())
		return s
	}
	s.snapshot = snapshot
	return s
}

// Builder returns the builder the handle adds to.
func (s *WorkerSession) Builder() *Builder { return s.b }

// Then adds a session-bound single step (then).
func (s *WorkerSession) Then(handler string, opts ...ThenOption) *WorkerSession {
	return s.bind(func() { s.b.Then(handler, opts...) })
}

// Parallel adds a parallel step whose every branch is session-bound.
func (s *WorkerSession) Parallel(handlers ...string) *WorkerSession {
	return s.bind(func() { s.b.Parallel(handlers...) })
}

// ForEach adds a for_each step whose every item job is session-bound; its
// placeholder job, which only plans the items, is not.
func (s *WorkerSession) ForEach(itemsKey, handler string, opts ...ForEachOption) *WorkerSession {
	return s.bind(func() { s.b.ForEach(itemsKey, handler, opts...) })
}

// CompensateWith attaches a compensation handler to the most recent step
// (compensate_with). The compensation job is not session-bound.
func (s *WorkerSession) CompensateWith(handler string) *WorkerSession {
	s.b.CompensateWith(handler)
	return s
}

// bind runs add and gives the step it added the worker_session key, after
// the step's own keys and before "compensation" (the PHP bridge writes the
// same order).
func (s *WorkerSession) bind(add func()) *WorkerSession {
	if !s.b.ok() {
		return s
	}
	before := len(s.b.steps)
	add()
	if !s.b.ok() || len(s.b.steps) == before {
		return s
	}
	step := &s.b.steps[len(s.b.steps)-1]
	body, snapshot := step.body, s.snapshot
	step.body = func() (*phpjson.Object, error) {
		o, err := body()
		if err != nil {
			return nil, err
		}
		return phpjson.CloneObject(o).Set(KeyWorkerSession, snapshot), nil
	}
	return s
}

// KeyWorkerSession is the step definition key holding a session-bound
// step's worker_session snapshot (a parallel branch of a serialized
// definition may carry its own).
const KeyWorkerSession = "worker_session"
