package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/sessions"
)

// sessionAgent is the worker's side of worker sessions: it registers the
// worker and keeps the registration fresh, admits session-bound jobs inside
// the claim, renews the leases of sessions whose jobs are running,
// and closes every session the worker holds at a planned stop.
type sessionAgent struct {
	w    *Worker
	reg  *sessions.Registry
	ns   string
	caps map[string]bool
	log  *slog.Logger

	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	renewed map[string]time.Time // session id → last lease renewal by us
	// noneAt is when a claim last found no session-bound candidates: the
	// next claims skip the read for a poll interval, so plain-job
	// throughput does not pay a round trip per claim for them.
	noneAt time.Time
}

func newSessionAgent(w *Worker) *sessionAgent {
	caps := map[string]bool{}
	for _, c := range w.cfg.Capabilities {
		caps[c] = true
	}
	return &sessionAgent{w: w, reg: w.c.sessions, ns: w.cfg.Namespace, caps: caps, log: w.log, renewed: map[string]time.Time{}}
}

// registration is what the worker advertises.
func (a *sessionAgent) registration() sessions.Registration {
	cfg := a.w.cfg
	limit := max(cfg.MaxWorkerSessions, 0)
	return sessions.Registration{
		Namespace: a.ns, WorkerID: a.w.id, TaskQueue: cfg.Queues[0], Queues: cfg.Queues,
		Runtime: "go", Capabilities: cfg.Capabilities,
		MaxConcurrentWorkerSessions: &limit,
		HeartbeatIntervalSeconds:    max(1, int(cfg.RegistrationHeartbeat/time.Second)),
	}
}

// Start registers the worker and starts the heartbeat loop.
func (a *sessionAgent) Start(ctx context.Context) error {
	if _, err := a.reg.Register(ctx, a.registration()); err != nil {
		return fmt.Errorf("register worker %s: %w", a.w.id, err)
	}
	a.w.publishClaims(ctx)
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go a.loop()
	return nil
}

// Stop closes the sessions the worker holds (a planned shutdown must, so
// another worker is not left waiting for a lease to lapse) and removes the
// registration, within 10 seconds. Call it after the last job finished.
func (a *sessionAgent) Stop() {
	close(a.stop)
	<-a.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := a.reg.CloseHeldBy(ctx, a.ns, a.w.id); err != nil {
		a.log.Warn("closing worker sessions failed; their leases will lapse", "err", err)
	} else if n > 0 {
		a.log.Info("closed worker sessions", "sessions", n)
	}
	if err := a.reg.Deregister(ctx, a.ns, a.w.id); err != nil && !errors.Is(err, sessions.ErrWorkerNotRegistered) {
		a.log.Warn("deregistering the worker failed; it will look stale", "err", err)
	}
}

func (a *sessionAgent) loop() {
	defer close(a.done)
	beat := a.w.clock.NewTicker(a.w.cfg.RegistrationHeartbeat)
	defer beat.Stop()
	// Leases are renewed well inside the shortest lease (1 s at least), so
	// the renewal tick is short; it does nothing while no session job runs.
	renew := a.w.clock.NewTicker(500 * time.Millisecond)
	defer renew.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-beat.C():
			a.heartbeat()
		case <-renew.C():
			a.renewLeases()
		}
	}
}

// heartbeat refreshes the registration; a registration that vanished (an
// operator deregistered it) is written again.
func (a *sessionAgent) heartbeat() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := a.reg.Heartbeat(ctx, a.ns, a.w.id, nil, a.w.claimMetrics())
	if errors.Is(err, sessions.ErrWorkerNotRegistered) {
		if _, err = a.reg.Register(ctx, a.registration()); err == nil {
			a.w.publishClaims(ctx)
		}
	}
	if err != nil {
		a.log.Warn("worker registration heartbeat failed; will retry", "err", err)
	}
}

// renewLeases renews the lease of every session with a running job once a
// third of its lease has passed.
func (a *sessionAgent) renewLeases() {
	bySession := map[string][]*running{}
	a.w.mu.Lock()
	for _, rj := range a.w.running {
		if sid := rj.row.SessionID; sid.Valid {
			bySession[sid.String] = append(bySession[sid.String], rj)
		}
	}
	a.w.mu.Unlock()
	now := time.Now()
	for sid, jobs := range bySession {
		a.mu.Lock()
		last := a.renewed[sid]
		a.mu.Unlock()
		if now.Sub(last) < jobs[0].sessionLease/3 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.renew(ctx, sid, jobs...); err != nil && !errors.Is(err, ErrSessionLost) {
			a.log.Warn("renewing worker session failed; will retry", "session", sid, "err", err)
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
	res, err := a.reg.HeartbeatSession(ctx, a.ns, sid, a.w.id, nil)
	if err != nil {
		return err
	}
	if !res.Admitted {
		cause := fmt.Errorf("%w: session %q: %s (%s)", ErrSessionLost, sid, res.Error, res.Reason)
		a.log.Warn("worker session renewal refused; stopping its jobs", "session", sid, "reason", res.Reason)
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
