package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
)

// sessionAgent is the worker's side of worker sessions: it registers the
// worker and keeps the registration fresh, admits session-bound jobs inside
// the claim, renews the leases of sessions whose jobs are running,
// and closes every session the worker holds at a planned stop.
type sessionAgent struct {
	sessionAgentParams
	caps map[string]bool
	// registered: Start registered the worker, so goodbye has a
	// registration to remove.
	registered atomic.Bool
	// Two loops on the injected clock: the registration's heartbeat, and
	// the renewal of running jobs' session leases.
	beat, renewal tickerService

	mu      sync.Mutex
	renewed map[string]time.Time // session id → last lease renewal by us
	// noneAt is when a claim last found no session-bound candidates: the
	// next claims skip the read for a poll interval, so plain-job
	// throughput does not pay a round trip per claim for them.
	noneAt time.Time
}

// sessionAgentParams are what the session agent needs of its worker.
type sessionAgentParams struct {
	Client   *Client // its session registry and store (sessions.Registry.ClaimJobs)
	Jobs     *runningSet
	Clock    clock.Clock
	Log      *slog.Logger
	WorkerID string
	// From the worker's Config.
	Namespace             string
	Queues, Capabilities  []string
	MaxWorkerSessions     int
	RegistrationHeartbeat time.Duration
	PollInterval          time.Duration
	// Publish writes what the worker claims into its registration
	// (fleet.go); Metrics are its claim counters for the heartbeat.
	Publish func(ctx context.Context)
	Metrics func() []byte
	// Buried counts and reports the jobs the session claim buried itself.
	Buried func(rows []store.JobRow)
}

// leaseRenewTick is how often the leases are looked at: well inside the
// shortest lease (1 s at least). A tick does nothing while no session job
// runs.
const leaseRenewTick = 500 * time.Millisecond

// sessionCallTimeout bounds one call to the session registry.
const sessionCallTimeout = 10 * time.Second

func newSessionAgent(p sessionAgentParams) *sessionAgent {
	caps := map[string]bool{}
	for _, c := range p.Capabilities {
		caps[c] = true
	}
	a := &sessionAgent{sessionAgentParams: p, caps: caps, renewed: map[string]time.Time{}}
	a.beat = tickerService{name: "worker registration", interval: p.RegistrationHeartbeat, log: p.Log,
		clock: p.Clock, skipFirst: true, round: func(ctx context.Context, _ time.Time) { a.heartbeat(ctx) }}
	a.renewal = tickerService{name: "session leases", interval: leaseRenewTick, log: p.Log,
		clock: p.Clock, skipFirst: true, round: func(ctx context.Context, _ time.Time) { a.renewLeases(ctx) }}
	return a
}

func (a *sessionAgent) registry() *sessions.Registry { return a.Client.sessions }

// registration is what the worker advertises.
func (a *sessionAgent) registration() sessions.Registration {
	limit := max(a.MaxWorkerSessions, 0)
	return sessions.Registration{
		Namespace: a.Namespace, WorkerID: a.WorkerID, TaskQueue: a.Queues[0], Queues: a.Queues,
		Runtime: "go", Capabilities: a.Capabilities,
		MaxConcurrentWorkerSessions: &limit,
		HeartbeatIntervalSeconds:    max(1, int(a.RegistrationHeartbeat/time.Second)),
	}
}

// Start registers the worker and starts the heartbeat loops.
func (a *sessionAgent) Start(ctx context.Context) error {
	if _, err := a.registry().Register(ctx, a.registration()); err != nil {
		return fmt.Errorf("register worker %s: %w", a.WorkerID, err)
	}
	a.registered.Store(true)
	a.Publish(ctx)
	_ = a.beat.Start(ctx)
	_ = a.renewal.Start(ctx)
	return nil
}

// Stop ends the heartbeat loops. The registration stays until goodbye.
func (a *sessionAgent) Stop() {
	a.beat.Stop()
	a.renewal.Stop()
}

// goodbye closes the sessions the worker holds (a planned shutdown must, so
// another worker is not left waiting for a lease to lapse) and removes the
// registration, within 10 seconds: ctx is the worker's stop's (or its
// failed start's), its values kept and its end not, since the goodbye
// comes last and a stop whose grace ran out must still say it. Call it
// after Stop, once the last job finished; it does nothing unless Start
// registered the worker.
func (a *sessionAgent) goodbye(ctx context.Context) {
	if !a.registered.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionCallTimeout)
	defer cancel()
	reg := a.registry()
	if n, err := reg.CloseHeldBy(ctx, a.Namespace, a.WorkerID); err != nil {
		a.Log.Warn("closing worker sessions failed; their leases will lapse", "err", err)
	} else if n > 0 {
		a.Log.Info("closed worker sessions", "sessions", n)
	}
	if err := reg.Deregister(ctx, a.Namespace, a.WorkerID); err != nil && !errors.Is(err, sessions.ErrWorkerNotRegistered) {
		a.Log.Warn("deregistering the worker failed; it will look stale", "err", err)
	}
}

// heartbeat refreshes the registration; a registration that vanished (an
// operator deregistered it) is written again.
func (a *sessionAgent) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, sessionCallTimeout)
	defer cancel()
	reg := a.registry()
	_, err := reg.Heartbeat(ctx, a.Namespace, a.WorkerID, nil, a.Metrics())
	if errors.Is(err, sessions.ErrWorkerNotRegistered) {
		if _, err = reg.Register(ctx, a.registration()); err == nil {
			a.Publish(ctx)
		}
	}
	if err != nil {
		a.Log.Warn("worker registration heartbeat failed; will retry", "err", err)
	}
}

// renewLeases renews the lease of every session with a running job once a
// third of its lease has passed.
func (a *sessionAgent) renewLeases(ctx context.Context) {
	bySession := a.Jobs.bySession()
	now := time.Now()
	for sid, jobs := range bySession {
		a.mu.Lock()
		last := a.renewed[sid]
		a.mu.Unlock()
		if now.Sub(last) < jobs[0].sessionLease/3 {
			continue
		}
		one, cancel := context.WithTimeout(ctx, sessionCallTimeout)
		if err := a.renew(one, sid, jobs...); err != nil && !errors.Is(err, ErrSessionLost) {
			a.Log.Warn("renewing worker session failed; will retry", "session", sid, "err", err)
		}
		cancel()
	}
	a.mu.Lock()
	for sid := range a.renewed {
		if _, ok := bySession[sid]; !ok {
			delete(a.renewed, sid)
		}
	}
	a.mu.Unlock()
}

// renewFor renews the session of a running job at once (a handler's
// Job.Heartbeat renews the job's session lease too).
func (a *sessionAgent) renewFor(ctx context.Context, rj *running) error {
	return a.renew(ctx, rj.row.SessionID.String, rj)
}

// renew renews session sid's lease. A refused renewal cancels jobs with
// ErrSessionLost and the reason, and returns that cause.
func (a *sessionAgent) renew(ctx context.Context, sid string, jobs ...*running) error {
	res, err := a.registry().HeartbeatSession(ctx, a.Namespace, sid, a.WorkerID, nil)
	if err != nil {
		return err
	}
	if !res.Admitted {
		cause := fmt.Errorf("%w: session %q: %s (%s)", ErrSessionLost, sid, res.Error, res.Reason)
		a.Log.Warn("worker session renewal refused; stopping its jobs", "session", sid, "reason", res.Reason)
		for _, rj := range jobs {
			rj.cancel(cause)
		}
		a.forget(sid)
		return cause
	}
	a.mu.Lock()
	a.renewed[sid] = time.Now()
	a.mu.Unlock()
	return nil
}

func (a *sessionAgent) forget(sid string) {
	a.mu.Lock()
	delete(a.renewed, sid)
	a.mu.Unlock()
}
