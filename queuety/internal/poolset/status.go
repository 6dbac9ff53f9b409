package poolset

import (
	"slices"
	"time"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// Pool states, as Status reports them.
const (
	StateNone     = "none"     // no pool: no PHP needed yet, or stopped when idle
	StateWaiting  = "waiting"  // at the cap: waiting for a place
	StateStarting = "starting" // loading the application
	StateRunning  = "running"  // running calls
	StateIdle     = "idle"     // running, no call
	StateDraining = "draining" // giving its place to a waiting site: runs its calls, takes no new job
	StateStopping = "stopping" // its processes are asked to exit
	StateFailed   = "failed"   // its last start failed, or it gave up; calls fail at once until RetryAt, then the next one tries again
)

// Status is a site's pool.
type Status struct {
	State string `json:"state"`
	// Since is when the pool started (running, idle, draining), or when
	// the site began to wait for a place.
	Since *time.Time `json:"since,omitempty"`
	// Error is the last failed start or give-up; RetryAt, while calls
	// fail at once, when the next one tries again.
	Error   string     `json:"error,omitempty"`
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// SharedWith names the other sites the pool serves.
	SharedWith []string `json:"shared_with,omitempty"`
	// PIDs are its PHP processes; Calls the calls it runs; Starts how many
	// times it was started (on demand, again after a reap).
	PIDs   []int `json:"pids,omitempty"`
	Calls  int   `json:"calls"`
	Starts int   `json:"starts"`
}

// Status reports site's pool; false for a site not attached.
func (s *Set) Status(site string) (Status, bool) {
	s.mu.Lock()
	e := s.bySite[site]
	if e == nil {
		s.mu.Unlock()
		return Status{}, false
	}
	now := s.clk.Now()
	st := Status{Calls: e.inUse, Starts: e.starts}
	at := func(t time.Time) *time.Time { return &t }
	switch {
	case e.starting:
		st.State = StateStarting
	case e.stopping:
		st.State = StateStopping
	case e.pool != nil && e.draining:
		st.State, st.Since = StateDraining, at(e.startedAt)
	case e.pool != nil && e.inUse > 0:
		st.State, st.Since = StateRunning, at(e.startedAt)
	case e.pool != nil:
		st.State, st.Since = StateIdle, at(e.startedAt)
	case e.queued:
		st.State, st.Since = StateWaiting, at(e.waitingSince)
	case e.err != nil:
		// Failed until a start succeeds, not only while calls fail at
		// once: the next try waits for a PHP job, and a probe must not see
		// the site ready in between.
		st.State = StateFailed
		if e.coolingDown(now) {
			st.RetryAt = at(e.retryAt)
		}
	default:
		st.State = StateNone
	}
	if e.err != nil {
		st.Error = e.err.Error()
	}
	for n := range e.sites {
		if n != site {
			st.SharedWith = append(st.SharedWith, n)
		}
	}
	slices.Sort(st.SharedWith)
	pool := e.pool
	s.mu.Unlock()
	if pool != nil {
		st.PIDs = slices.DeleteFunc(pool.Stats().PIDs, func(pid int) bool { return pid == 0 })
	}
	return st, true
}

// Stats are the set's counts.
type Stats struct {
	// Alive is the pools starting, running or stopping; Peak the most
	// there were at once; Waiting the keys queued for a place.
	Alive, Peak, Waiting int
}

// Stats returns the set's counts.
func (s *Set) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Alive: s.alive, Peak: s.peak, Waiting: len(s.queue)}
}

// Pool is site's running pool, nil while it has none (not started yet,
// or stopped); for its counters.
func (s *Set) Pool(site string) *phppool.Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.bySite[site]; e != nil {
		return e.pool
	}
	return nil
}
