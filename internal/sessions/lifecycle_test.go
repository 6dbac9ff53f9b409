package sessions

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WorkerSessionProtocolTest's lifecycle: create 201, heartbeat 200, list,
// close 200, detail closed; then the SDK tests' duplicate close and
// session_closed for everyone.
func TestLifecycleCreateHeartbeatClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("gpu-worker-1", "query_tasks", "gpu:nvidia-l4")
	e.register("gpu-worker-2", "gpu:nvidia-l4")

	res := e.create("gpu-worker-1", gpu("gpu-render"))
	requireAdmitted(t, res, OutcomeCreated, 201)
	s := res.Session
	require.Equal(t, "gpu-render", s.SessionID)
	require.Equal(t, "default", s.Namespace)
	require.Equal(t, StatusActive, s.Status)
	require.Equal(t, "gpu-worker-1", *s.LeaseOwner)
	require.Equal(t, "gpu-activities", *s.Queue)
	require.Equal(t, []string{"gpu:nvidia-l4"}, s.Requirements)
	require.Equal(t, t0.Add(120*time.Second), *s.LeaseExpiresAt)
	require.Equal(t, t0.Add(600*time.Second), *s.TTLExpiresAt)
	require.Equal(t, t0, *s.LastHeartbeatAt)
	require.Nil(t, s.FailureReason)
	require.Equal(t, &Holder{WorkerID: "gpu-worker-1", TaskQueue: val("gpu-activities"), Status: val("active"), LastHeartbeatAt: &t0}, s.Holder)
	require.Nil(t, res.ActivityTaskID)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"activity_task_id":null,"status":201,"reason":null`)
	require.Contains(t, string(b), `"lease_expires_at":"2026-11-30T05:02:00Z","ttl_expires_at":"2026-11-30T05:10:00Z"`)

	e.clk.Advance(30 * time.Second)
	hb := e.heartbeat("gpu-render", "gpu-worker-1", val(180))
	requireAdmitted(t, hb, OutcomeHeartbeatRecorded, 200)
	require.Equal(t, t0.Add(30*time.Second+180*time.Second), *hb.Session.LeaseExpiresAt)
	require.Equal(t, t0.Add(600*time.Second), *hb.Session.TTLExpiresAt, "a heartbeat never extends the TTL")
	require.Equal(t, 120, hb.Session.LeaseSeconds, "the override is not stored")
	require.Nil(t, field(t, hb, "activity_task_id"), "only admissions carry activity_task_id")

	v := e.list()
	require.Equal(t, Metrics{Total: 1, Active: 1}, v.Metrics)
	require.Len(t, v.Sessions, 1)
	require.Equal(t, StatusActive, v.Sessions[0].Status)

	cl := e.close("gpu-render", "gpu-worker-1")
	requireAdmitted(t, cl, OutcomeClosed, 200)
	require.Equal(t, StatusClosed, cl.Session.Status)
	require.Equal(t, t0.Add(30*time.Second), *cl.Session.ClosedAt)
	require.Equal(t, StatusClosed, e.get("gpu-render").Status)

	again := e.close("gpu-render", "gpu-worker-1")
	requireAdmitted(t, again, OutcomeAlreadyClosed, 200)
	requireRefused(t, e.close("gpu-render", "gpu-worker-2"), ReasonSessionOwnerMismatch)

	for _, w := range []string{"gpu-worker-1", "gpu-worker-2"} {
		res := e.create(w, gpu("gpu-render"))
		requireRefused(t, res, ReasonSessionClosed)
		require.Equal(t, StatusClosed, res.Session.Status)
	}
	requireRefused(t, e.heartbeat("gpu-render", "gpu-worker-1", nil), ReasonSessionNotActive)
	require.Equal(t, Metrics{Total: 1, Closed: 1}, e.list().Metrics)
}

func TestReuseRenewsTheLeaseAndKeepsTheTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)

	e.clk.Advance(100 * time.Second)
	_, err := e.reg.Heartbeat(e.ctx, "", "w1", nil, nil) // else its sessions are orphaned
	require.NoError(t, err)
	o := gpu("s")
	o.LeaseSeconds = val(200)
	o.TTLSeconds = val(5000)
	res := e.create("w1", o)
	requireAdmitted(t, res, OutcomeReused, 200)
	require.Equal(t, t0.Add(600*time.Second), *res.Session.TTLExpiresAt)
	require.Equal(t, t0.Add(300*time.Second), *res.Session.LeaseExpiresAt)
	require.Equal(t, 200, res.Session.LeaseSeconds, "reuse copies the incoming options")
	require.Equal(t, 5000, res.Session.TTLSeconds)

	e.clk.Advance(10 * time.Second)
	hb := e.heartbeat("s", "w1", nil)
	requireAdmitted(t, hb, OutcomeHeartbeatRecorded, 200)
	require.Equal(t, t0.Add(310*time.Second), *hb.Session.LeaseExpiresAt, "the stored lease_seconds")
	require.Equal(t, t0.Add(600*time.Second), *hb.Session.TTLExpiresAt)
}

func TestSessionOwnedByAnotherWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)
	res := e.create("w2", gpu("s"))
	requireRefused(t, res, ReasonOwnedByAnotherWorker)
	require.Equal(t, 409, res.Status)
	require.Equal(t, "w1", *res.Session.LeaseOwner)
}

func TestWorkerSessionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.registerWith(Registration{WorkerID: "w1", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}, MaxConcurrentWorkerSessions: val(1)})
	requireAdmitted(t, e.create("w1", gpu("s1")), OutcomeCreated, 201)

	res := e.create("w1", gpu("s2"))
	requireRefused(t, res, ReasonWorkerSessionLimitExceeded)
	require.Equal(t, 1, *res.MaxConcurrentWorkerSessions)
	require.Equal(t, float64(1), field(t, res, "max_concurrent_worker_sessions"))
	requireAdmitted(t, e.create("w1", gpu("s1")), OutcomeReused, 200) // reuse is never limited

	// A lease that lapsed no longer counts, even before a refresh marks it.
	e.clk.Advance(120 * time.Second)
	requireAdmitted(t, e.create("w1", gpu("s2")), OutcomeCreated, 201)

	// A worker registered with no session slots holds none.
	e.registerWith(Registration{WorkerID: "w0", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}, MaxConcurrentWorkerSessions: val(0)})
	res = e.create("w0", gpu("s3"))
	requireRefused(t, res, ReasonWorkerSessionLimitExceeded)
	require.Equal(t, "Worker is not configured to hold worker-session leases.", res.Error)
	require.Nil(t, res.MaxConcurrentWorkerSessions)
	require.Nil(t, field(t, res, "max_concurrent_worker_sessions"))
}

func TestRequirementsNotMet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4", "zone:a")
	o := gpu("s")
	o.Requirements = []string{" gpu:nvidia-l4 ", "gpu:absent", "fs:/mnt", "gpu:absent"}
	res := e.create("w1", o)
	requireRefused(t, res, ReasonRequirementsNotMet)
	require.Equal(t, []string{"gpu:absent", "fs:/mnt"}, res.MissingRequirements)
	require.Nil(t, res.Session)
	require.Empty(t, e.list().Sessions, "a refusal creates no session")
}

func TestHeartbeatAndCloseByANonOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)

	res := e.heartbeat("s", "w2", val(60))
	requireRefused(t, res, ReasonSessionOwnerMismatch)
	require.Equal(t, "w1", *res.Session.LeaseOwner)
	requireRefused(t, e.close("s", "w2"), ReasonSessionOwnerMismatch)
	require.Equal(t, StatusActive, e.get("s").Status)
	require.Equal(t, t0.Add(120*time.Second), *e.get("s").LeaseExpiresAt, "nothing changed")

	nf := e.heartbeat("nope", "w1", nil)
	requireRefused(t, nf, ReasonSessionNotFound)
	require.Equal(t, 404, nf.Status)
	requireRefused(t, e.close("nope", "w1"), ReasonSessionNotFound)
	_, err := e.reg.Get(e.ctx, "", "nope")
	require.ErrorIs(t, err, ErrSessionNotFound)
}

// The holder deregisters: its session is orphaned on the next read and a
// replacement reacquires it with the original TTL; the old holder's renew
// is refused.
func TestReacquireAfterDeregistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)

	e.clk.Advance(5 * time.Second)
	require.NoError(t, e.reg.Deregister(e.ctx, "", "w1"))
	s := e.get("s")
	require.Equal(t, StatusOrphaned, s.Status)
	require.Equal(t, FailureWorkerHeartbeatStale, *s.FailureReason)
	require.Equal(t, &Holder{WorkerID: "w1", IsStale: true}, s.Holder)
	require.Equal(t, Metrics{Total: 1, Orphaned: 1}, e.list().Metrics)

	res := e.create("w2", gpu("s"))
	requireAdmitted(t, res, OutcomeReacquired, 200)
	require.Equal(t, "w2", *res.Session.LeaseOwner)
	require.Equal(t, StatusActive, res.Session.Status)
	require.Nil(t, res.Session.FailureReason)
	require.Equal(t, t0.Add(600*time.Second), *res.Session.TTLExpiresAt, "the TTL is absolute")
	require.Equal(t, t0.Add(5*time.Second+120*time.Second), *res.Session.LeaseExpiresAt)

	requireRefused(t, e.heartbeat("s", "w1", nil), ReasonSessionOwnerMismatch)
}

// The holder stops heartbeating its registration: orphaned before its
// session lease expires.
func TestOrphanedWhenTheHolderHeartbeatIsStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)

	e.clk.Advance(60 * time.Second)
	_, err := e.reg.Heartbeat(e.ctx, "", "w2", nil, nil)
	require.NoError(t, err)
	require.Equal(t, StatusActive, e.get("s").Status, "60 s old is not stale yet")
	requireAdmitted(t, e.heartbeat("s", "w1", nil), OutcomeHeartbeatRecorded, 200) // a session heartbeat is not a registration heartbeat

	e.clk.Advance(1 * time.Second)
	s := e.get("s")
	require.Equal(t, StatusOrphaned, s.Status)
	require.Equal(t, FailureWorkerHeartbeatStale, *s.FailureReason)
	require.True(t, s.Holder.IsStale)
	require.Equal(t, t0.Add(60*time.Second+120*time.Second), *s.LeaseExpiresAt, "orphaned while the lease still runs")
	requireRefused(t, e.heartbeat("s", "w1", nil), ReasonSessionNotActive)
	requireAdmitted(t, e.create("w2", gpu("s")), OutcomeReacquired, 200)
}

func TestReacquireAfterLeaseExpiryKeepsTheTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	o := gpu("s")
	o.LeaseSeconds = val(3)
	requireAdmitted(t, e.create("w1", o), OutcomeCreated, 201)

	e.clk.Advance(2 * time.Second)
	require.Equal(t, StatusActive, e.get("s").Status)
	e.clk.Advance(1 * time.Second)
	_, err := e.reg.Heartbeat(e.ctx, "", "w2", nil, nil)
	require.NoError(t, err)
	s := e.get("s")
	require.Equal(t, StatusExpired, s.Status)
	require.Equal(t, FailureLeaseExpired, *s.FailureReason)

	res := e.create("w2", o)
	requireAdmitted(t, res, OutcomeReacquired, 200)
	require.Equal(t, t0.Add(600*time.Second), *res.Session.TTLExpiresAt)
	require.Nil(t, res.Session.FailureReason)
	requireRefused(t, e.heartbeat("s", "w1", nil), ReasonSessionOwnerMismatch)
}

func TestReacquireDisallowedAfterTheTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	o := gpu("s")
	o.TTLSeconds = val(10)
	requireAdmitted(t, e.create("w1", o), OutcomeCreated, 201)

	e.clk.Advance(10 * time.Second)
	_, err := e.reg.Heartbeat(e.ctx, "", "w2", nil, nil)
	require.NoError(t, err)
	res := e.heartbeat("s", "w1", nil)
	requireRefused(t, res, ReasonSessionNotActive)
	require.Equal(t, StatusExpired, res.Session.Status)
	require.Equal(t, FailureTTLExpired, *res.Session.FailureReason, "the TTL check comes before the lease")
	for _, w := range []string{"w1", "w2"} {
		requireRefused(t, e.create(w, o), ReasonReacquireDisallowed)
	}
	require.Equal(t, Metrics{Total: 1, Expired: 1}, e.list().Metrics)
}

func TestReacquireDisallowedByOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")

	// Stored false: the session is terminal once it fails.
	stored := gpu("stored")
	stored.LeaseSeconds = val(5)
	stored.AllowReacquireAfterFailure = val(false)
	requireAdmitted(t, e.create("w1", stored), OutcomeCreated, 201)
	// Incoming false: this admission does not want to take over.
	incoming := gpu("incoming")
	incoming.LeaseSeconds = val(5)
	requireAdmitted(t, e.create("w1", incoming), OutcomeCreated, 201)

	e.clk.Advance(5 * time.Second)
	_, err := e.reg.Heartbeat(e.ctx, "", "w2", nil, nil)
	require.NoError(t, err)
	res := e.create("w2", gpu("stored"))
	requireRefused(t, res, ReasonReacquireDisallowed)
	require.Contains(t, res.Error, "terminal")
	incoming.AllowReacquireAfterFailure = val(false)
	res = e.create("w2", incoming)
	requireRefused(t, res, ReasonReacquireDisallowed)
	require.Contains(t, res.Error, "options disallow")
	incoming.AllowReacquireAfterFailure = nil
	requireAdmitted(t, e.create("w2", incoming), OutcomeReacquired, 200)
}

func TestSessionMissingWithoutCreateIfMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	o := gpu("s")
	o.CreateIfMissing = val(false)
	requireRefused(t, e.create("w1", o), ReasonSessionMissing)
	require.Empty(t, e.list().Sessions)
	requireAdmitted(t, e.create("w1", gpu("s")), OutcomeCreated, 201)
	requireAdmitted(t, e.create("w1", o), OutcomeReused, 200)
}

func TestCreateRequiresARegistrationAndItsQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.create("ghost", gpu("s"))
	requireRefused(t, res, ReasonWorkerNotRegistered)
	require.Equal(t, 412, res.Status)
	require.Equal(t, "ghost", field(t, res, "worker_id"))

	e.registerWith(Registration{WorkerID: "w1", TaskQueue: "gpu-activities", Queues: []string{"cpu"}, Capabilities: []string{"gpu:nvidia-l4"}})
	o := gpu("s")
	o.Queue = val("other")
	res = e.create("w1", o)
	requireRefused(t, res, ReasonSessionQueueMismatch)
	require.Equal(t, "gpu-activities", field(t, res, "registered_task_queue"))
	require.Equal(t, "other", field(t, res, "requested_session_queue"))

	o.Queue = nil
	res = e.create("w1", o)
	requireAdmitted(t, res, OutcomeCreated, 201)
	require.Equal(t, "gpu-activities", *res.Session.Queue, "an explicit create defaults to the worker's task_queue")
	o.SessionID, o.Queue = "s2", val("cpu")
	requireAdmitted(t, e.create("w1", o), OutcomeCreated, 201)

	blank := gpu("   ")
	res = e.create("w1", blank)
	requireRefused(t, res, ReasonInvalidWorkerSession)
	require.Equal(t, 422, res.Status)
}

func TestAdmitForJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.registerWith(Registration{WorkerID: "w1", TaskQueue: "gpu-activities", Queues: []string{"cpu"}, Capabilities: []string{"gpu:nvidia-l4"}})
	e.register("w2", "gpu:nvidia-l4")

	res := e.admit(Admission{WorkerID: "ghost", Options: gpu("s"), JobID: 7})
	requireRefused(t, res, ReasonWorkerNotRegistered)

	j1 := e.processing("s", "w1")
	res = e.admit(Admission{WorkerID: "w1", Options: gpu("s"), JobID: j1})
	requireAdmitted(t, res, OutcomeCreated, 201)
	require.Equal(t, formatID(j1), *res.ActivityTaskID)
	require.Equal(t, formatID(j1), field(t, res, "activity_task_id"))
	require.Equal(t, 1, res.Session.ActiveActivityCount, "the snapshot counts every running attempt")

	// max_concurrent_activities = 1 and j1 runs: a second job waits, j1
	// itself is not counted against its own admission.
	j2 := e.processing("other-session", "w1")
	res = e.admit(Admission{WorkerID: "w1", Options: gpu("s"), JobID: j2})
	requireRefused(t, res, ReasonActivityLimitExceeded)
	require.Equal(t, 1, *res.MaxConcurrentActivities)
	require.Equal(t, 1, res.Session.ActiveActivityCount)
	requireAdmitted(t, e.admit(Admission{WorkerID: "w1", Options: gpu("s"), JobID: j1}), OutcomeReused, 200)
	requireRefused(t, e.admit(Admission{WorkerID: "w2", Options: gpu("s"), JobID: j2}), ReasonOwnedByAnotherWorker)

	// Two allowed: one running plus one admitted earlier in the window fill it.
	two := gpu("s")
	two.MaxConcurrentActivities = val(2)
	requireAdmitted(t, e.admit(Admission{WorkerID: "w1", Options: two, JobID: j2}), OutcomeReused, 200)
	res = e.admit(Admission{WorkerID: "w1", Options: two, JobID: j2, InWindow: 1})
	requireRefused(t, res, ReasonActivityLimitExceeded)
	require.Equal(t, 2, *res.MaxConcurrentActivities)

	// Jobs of another holder do not count: only the holder's attempts do.
	e.processing("t", "w2")
	requireAdmitted(t, e.admit(Admission{WorkerID: "w1", Options: gpu("t"), JobID: 1000}), OutcomeCreated, 201)
	res = e.admit(Admission{WorkerID: "w1", Options: gpu("t"), JobID: 1001, InWindow: 1})
	requireRefused(t, res, ReasonActivityLimitExceeded)

	// Queue routing for a worker with several queues.
	cpu := gpu("c")
	cpu.Queue = val("cpu")
	requireAdmitted(t, e.admit(Admission{WorkerID: "w1", Options: cpu, JobID: 1002}), OutcomeCreated, 201)
	cpu.Queue = nil
	cpu.SessionID = "c2"
	res = e.admit(Admission{WorkerID: "w1", Options: cpu, JobID: 1003})
	requireAdmitted(t, res, OutcomeCreated, 201)
	require.Nil(t, res.Session.Queue, "a job admission stores the queue its options name")
	aff := res.Session.Affinity()
	validate(t, "workerSessionTaskAffinity", aff)
	require.NotContains(t, aff, "queue", "nulls are dropped")
	require.NotContains(t, aff, "connection")
	require.Equal(t, "w1", aff["lease_owner"])
	require.Equal(t, "2026-11-30T05:02:00Z", aff["lease_expires_at"])
	cpu.Queue = val("elsewhere")
	requireRefused(t, e.admit(Admission{WorkerID: "w1", Options: cpu, JobID: 1004}), ReasonSessionQueueMismatch)
}

func TestCloseHeldByClosesEverySessionTheWorkerHolds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	short := gpu("lapsed")
	short.LeaseSeconds = val(1)
	requireAdmitted(t, e.create("w1", gpu("explicit")), OutcomeCreated, 201)
	requireAdmitted(t, e.admit(Admission{WorkerID: "w1", Options: gpu("auto"), JobID: 5}), OutcomeCreated, 201)
	requireAdmitted(t, e.create("w1", short), OutcomeCreated, 201)
	requireAdmitted(t, e.create("w2", gpu("other")), OutcomeCreated, 201)
	requireAdmitted(t, e.create("w1", gpu("done")), OutcomeCreated, 201)
	requireAdmitted(t, e.close("done", "w1"), OutcomeClosed, 200)
	e.clk.Advance(2 * time.Second)

	n, err := e.reg.CloseHeldBy(e.ctx, "", "w1")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range []string{"explicit", "auto", "lapsed"} {
		require.Equal(t, StatusClosed, e.get(id).Status, id)
		requireRefused(t, e.create("w2", gpu(id)), ReasonSessionClosed)
	}
	require.Equal(t, StatusActive, e.get("other").Status)
	require.Equal(t, Metrics{Total: 5, Active: 1, Closed: 4}, e.list().Metrics)
}

func TestListMetricsPerStateAndOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	short := func(id string) Options { o := gpu(id); o.LeaseSeconds = val(10); return o }
	requireAdmitted(t, e.create("w1", short("b-expired")), OutcomeCreated, 201)
	requireAdmitted(t, e.create("w1", short("a-expired")), OutcomeCreated, 201)
	e.clk.Advance(time.Second)
	requireAdmitted(t, e.create("w1", gpu("closed")), OutcomeCreated, 201)
	requireAdmitted(t, e.close("closed", "w1"), OutcomeClosed, 200)
	e.clk.Advance(time.Second)
	requireAdmitted(t, e.create("w2", gpu("orphaned")), OutcomeCreated, 201)
	e.clk.Advance(time.Second)
	requireAdmitted(t, e.create("w1", gpu("active")), OutcomeCreated, 201)
	require.NoError(t, e.reg.Deregister(e.ctx, "", "w2"))
	// Another namespace is counted apart.
	_, err := e.reg.Register(e.ctx, Registration{Namespace: "other", WorkerID: "w1", TaskQueue: "gpu-activities"})
	require.NoError(t, err)
	res, err := e.reg.Create(e.ctx, "other", "w1", Options{SessionID: "active"})
	require.NoError(t, err)
	requireAdmitted(t, res, OutcomeCreated, 201)

	e.clk.Advance(8 * time.Second) // t0+11: the 10 s leases lapsed
	_, err = e.reg.Heartbeat(e.ctx, "", "w1", nil, nil)
	require.NoError(t, err)
	v := e.list()
	require.Equal(t, "default", v.Namespace)
	require.Equal(t, Metrics{Total: 5, Active: 1, Closed: 1, Expired: 2, Orphaned: 1}, v.Metrics)
	var order []string
	for _, s := range v.Sessions {
		order = append(order, s.SessionID+"="+s.Status)
	}
	// Refreshed rows changed now; then by updated_at descending, session id.
	require.Equal(t, []string{"a-expired=expired", "b-expired=expired", "orphaned=orphaned", "active=active", "closed=closed"}, order)
	m, err := e.reg.Metrics(e.ctx, "")
	require.NoError(t, err)
	require.Equal(t, v.Metrics, m)
	validate(t, "workerSessionMetrics", m)

	other, err := e.reg.List(e.ctx, "other")
	require.NoError(t, err)
	require.Equal(t, Metrics{Total: 1, Active: 1}, other.Metrics)
	require.Equal(t, "other", other.Sessions[0].Namespace)

	empty, err := e.reg.List(e.ctx, "empty")
	require.NoError(t, err)
	validate(t, "workerSessionVisibility", empty)
	require.Equal(t, []any{}, field(t, empty, "sessions"))
}

func formatID(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// A session that lapsed on its lease (or its holder) before its TTL keeps
// that failure reason; once the TTL has passed it still cannot be
// reacquired, and the refusal records ttl_expired.
func TestReacquireDisallowedAfterTheTTLOfAnExpiredSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	e.register("w2", "gpu:nvidia-l4")
	o := gpu("s")
	o.LeaseSeconds, o.TTLSeconds = val(3), val(10)
	requireAdmitted(t, e.create("w1", o), OutcomeCreated, 201)

	e.clk.Advance(5 * time.Second)
	s := e.get("s")
	require.Equal(t, StatusExpired, s.Status)
	require.Equal(t, FailureLeaseExpired, *s.FailureReason)

	e.clk.Advance(20 * time.Second) // t=25, past the TTL at t=10
	res := e.create("w2", o)
	requireRefused(t, res, ReasonReacquireDisallowed)
	require.Contains(t, res.Error, "terminal")
	require.Equal(t, StatusExpired, res.Session.Status)
	require.Equal(t, FailureTTLExpired, *res.Session.FailureReason)
	s = e.get("s")
	require.Equal(t, StatusExpired, s.Status)
	require.Equal(t, FailureTTLExpired, *s.FailureReason, "the refusal is recorded")
	require.Equal(t, t0.Add(25*time.Second), s.UpdatedAt)
	require.Equal(t, t0.Add(10*time.Second), *s.TTLExpiresAt)
	requireRefused(t, e.create("w1", o), ReasonReacquireDisallowed)
	requireRefused(t, e.admit(Admission{WorkerID: "w2", Options: o, JobID: 7}), ReasonReacquireDisallowed)
}

// The same for a session orphaned by its holder's stale registration.
func TestReacquireDisallowedAfterTheTTLOfAnOrphanedSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("w1", "gpu:nvidia-l4")
	o := gpu("s")
	o.TTLSeconds = val(100)
	requireAdmitted(t, e.create("w1", o), OutcomeCreated, 201)

	e.clk.Advance(61 * time.Second)
	s := e.get("s")
	require.Equal(t, StatusOrphaned, s.Status)
	require.Equal(t, FailureWorkerHeartbeatStale, *s.FailureReason)

	e.clk.Advance(39 * time.Second) // exactly the TTL: ttl_expires_at <= now
	e.register("w2", "gpu:nvidia-l4")
	res := e.create("w2", o)
	requireRefused(t, res, ReasonReacquireDisallowed)
	require.Equal(t, StatusExpired, res.Session.Status)
	require.Equal(t, FailureTTLExpired, *res.Session.FailureReason)
	require.Equal(t, Metrics{Total: 1, Expired: 1}, e.list().Metrics)
}
