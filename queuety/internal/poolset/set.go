package poolset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
	"github.com/queuety-go/queuety/workflow"
)

// Defaults of Config.
const (
	DefaultMax   = 100
	DefaultTurn  = 10 * time.Second
	DefaultRetry = 5 * time.Second
)

// idleGrace is how long a pool must have had no call before it is given to
// a waiting site ahead of its turn: a busy site's pool is between two jobs
// for a moment after each, and stopping it there would start a pool for
// every job.
const idleGrace = time.Second

// stopWait bounds a pool's stop: its processes are asked to exit and
// killed after their StopGrace; this only matters for one that ignores
// both.
const stopWait = 2 * phppool.DefaultStopGrace

// Config configures a Set.
type Config struct {
	// Max is how many pools may be alive at once (default 100).
	Max int
	// Idle stops a pool after this long without a call; 0 never does.
	Idle time.Duration
	// Turn is how long a pool keeps its place, once started, while other
	// sites wait for one at Max (default 10 s).
	Turn time.Duration
	// Retry is how long after a failed start, or a pool that gave up, the
	// next call tries again (default 5 s); calls meanwhile fail at once.
	Retry  time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Set is the PHP pools of many sites: Attach a site, Start, and the
// Handles start, share, stop and cap the pools as the package doc says.
type Set struct {
	cfg  Config
	log  *slog.Logger
	clk  clock.Clock
	loop startstop.Loop

	mu sync.Mutex
	// life is Start's context without its end: pools start, stop and read
	// class settings under it. nil before Start and after Stop.
	life    context.Context
	entries map[string]*entry // by key
	bySite  map[string]*entry
	// queue is the keys waiting for a place, in arrival order.
	queue []*entry
	alive int // pools starting, running or stopping
	peak  int
	// changed is closed and replaced whenever a waiter may go on: a pool
	// started, failed to start or stopped, a site left.
	changed chan struct{}
}

// entry is one key's pool, whichever sites share it.
type entry struct {
	key   string
	cfg   phppool.Config
	sites map[string]int // attachments by site

	pool     *phppool.Pool // running (draining included)
	poolDone chan struct{} // closed once pool has stopped
	starting bool
	stopping bool
	draining bool // gives its place away: takes no new job
	inUse    int  // calls running in pool
	waiters  int  // calls waiting for a place
	queued   bool
	gone     bool // no site left: stopped for good

	startedAt, lastUsed, waitingSince time.Time
	starts                            int
	err                               error // the last failed start or give-up
	retryAt                           time.Time
	// failedStarts counts the starts that failed since the last one that
	// succeeded (StartError.Down).
	failedStarts int
	// meta is the class settings read through this key's pools, kept
	// across their restarts.
	meta map[string]metaResult
	// reading is the classes PeekClassMetadata is reading in the
	// background.
	reading map[string]bool
}

type metaResult struct {
	m   workflow.HandlerMetadata
	err error // a PHP exception, the class's answer
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Set, error) {
	switch {
	case cfg.Max < 0:
		return nil, fmt.Errorf("poolset: Max %d: must not be negative", cfg.Max)
	case cfg.Idle < 0:
		return nil, fmt.Errorf("poolset: Idle %v: must not be negative (0: never)", cfg.Idle)
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Turn <= 0 {
		cfg.Turn = DefaultTurn
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, entries: map[string]*entry{}, bySite: map[string]*entry{},
		changed: make(chan struct{})}
	// The reaper looks often enough to stop an idle pool within half its
	// Idle, and to hand places over about when a turn or the idle grace
	// ends.
	every := idleGrace
	if cfg.Idle > 0 {
		every = min(every, cfg.Idle/2)
	}
	s.loop = startstop.Loop{Name: "php pools", Log: cfg.Logger, Clock: cfg.Clock, Every: max(every, 10*time.Millisecond),
		SkipFirst: true, Round: s.RunOnce}
	return s, nil
}

// Start starts the reaper; the Handles start pools from now on.
func (s *Set) Start(ctx context.Context) error {
	s.mu.Lock()
	s.life = context.WithoutCancel(ctx)
	s.mu.Unlock()
	return s.loop.Start(ctx)
}

// Stop stops the reaper and every pool (each within its stop grace), and
// waits for them unless ctx ends first; the Handles' calls then fail with
// phppool.ErrStopped.
func (s *Set) Stop(ctx context.Context) {
	s.loop.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life == nil {
		return
	}
	var all []*entry
	for _, e := range s.entries {
		e.gone = true
		s.dequeue(e)
		all = append(all, e)
	}
	s.broadcast()
	s.settle(ctx, all)
	s.entries = map[string]*entry{}
	s.bySite = map[string]*entry{}
	s.life = nil
}

// settle stops the pools of the gone entries es, as their starts end, and
// waits until none is starting, running or stopping (s.mu held, released
// while waiting). ctx ending ends the wait, not the stops.
func (s *Set) settle(ctx context.Context, es []*entry) {
	for {
		busy := false
		for _, e := range es {
			if e.pool != nil {
				s.stopPool(e)
			}
			busy = busy || e.busy()
		}
		if !busy {
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return
		}
		s.mu.Lock()
	}
}

// RunOnce stops the pools idle for Config.Idle and makes room for the
// sites waiting at Max whose turn came; the reaper runs it.
func (s *Set) RunOnce(_ context.Context, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Idle > 0 {
		for _, e := range s.entries {
			if e.pool != nil && e.inUse == 0 && !e.draining && now.Sub(e.lastUsed) >= s.cfg.Idle {
				s.log.Info("PHP pool idle; stopping it", "sites", e.label(), "idle", now.Sub(e.lastUsed).Round(time.Millisecond))
				s.stopPool(e)
			}
		}
	}
	s.makeRoom(now)
}

// Attach makes site one of key's sites and returns its Handle; each Attach
// is undone by a Detach (a site restarted may be attached again before its
// old worker's Detach). Sites attached under one key share a pool, started
// with cfg (the first site's): give one key only to sites whose pools
// would be the same processes.
func (s *Set) Attach(site, key string, cfg phppool.Config) *Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.bySite[site]
	if e == nil || e.key != key || e.gone {
		if e != nil {
			// Its key changed (it loads another URL): Sites stops a
			// changed site before it starts it again, so nothing uses
			// the old attachments any more.
			s.leave(e, site, e.sites[site])
		}
		if e = s.entries[key]; e == nil || e.gone {
			e = &entry{key: key, cfg: cfg, sites: map[string]int{}, meta: map[string]metaResult{}, reading: map[string]bool{}}
			s.entries[key] = e
		}
		s.bySite[site] = e
	}
	e.sites[site]++
	return &Handle{s: s, e: e}
}

// Detach undoes one Attach of site (its worker stopped). A pool no site
// uses any more is stopped before Detach returns.
func (s *Set) Detach(site string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.bySite[site]; e != nil {
		s.leave(e, site, 1)
	}
}

// leave takes n attachments of site from e (s.mu held); the last site gone,
// its pool is stopped, and waited for.
func (s *Set) leave(e *entry, site string, n int) {
	if e.sites[site] -= n; e.sites[site] > 0 {
		return
	}
	delete(e.sites, site)
	if s.bySite[site] == e {
		delete(s.bySite, site)
	}
	if len(e.sites) > 0 {
		return
	}
	e.gone = true
	s.dequeue(e)
	s.broadcast() // its waiters leave
	if s.life != nil {
		s.settle(s.life, []*entry{e})
	}
	if s.entries[e.key] == e {
		delete(s.entries, e.key)
	}
}

// busy reports a pool starting, running or stopping.
func (e *entry) busy() bool { return e.starting || e.pool != nil || e.stopping }

// startable reports an entry without a pool that may start one now.
func (e *entry) startable(now time.Time) bool {
	return !e.busy() && !e.gone && !e.coolingDown(now)
}

func (e *entry) coolingDown(now time.Time) bool { return e.err != nil && now.Before(e.retryAt) }

// label names the entry's sites for logs: up to three, then how many more.
func (e *entry) label() string {
	names := make([]string, 0, len(e.sites))
	for n := range e.sites {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 3 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	return strings.Join(names, ", ")
}

// StartError is a call's failure when its pool could not be started (or
// gave up): Err is why, RetryAt when the next call starts it again,
// FailedStarts how many starts in a row failed.
type StartError struct {
	Err          error
	RetryAt      time.Time
	FailedStarts int
}

// downAfter is how many starts in a row must fail before a pool counts as
// down (queuety.ErrPHPDown): the first start and the one Retry after it.
// One failure may be passing (the database WordPress loads from was
// restarting); a second, Retry later, is a broken command or
// application, which a drain (flush, --stop-when-empty) then does not
// wait for.
const downAfter = 2

func (e *StartError) Error() string {
	if e.FailedStarts >= downAfter {
		// Said at the end of a drain too, where when it is tried next
		// does not matter.
		return fmt.Sprintf("the site's PHP pool failed to start %d times in a row: %v", e.FailedStarts, e.Err)
	}
	return fmt.Sprintf("the site's PHP pool is not running (tried again from %s): %v", e.RetryAt.Format(time.RFC3339), e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Is makes a pool that failed to start downAfter times in a row
// queuety.ErrPHPDown.
func (e *StartError) Is(target error) bool {
	return target == queuety.ErrPHPDown && e.FailedStarts >= downAfter
}

// acquire returns e's running pool for one call, starting it or waiting
// for a place as needed; release gives it back. job is a job's or step's
// run: a draining pool takes none (its other calls, which may run with
// row locks held, it still takes). now is a call made with row locks
// held: it neither starts the pool nor waits, and fails with
// workflow.ErrPHPNotReady when the pool is not running.
func (s *Set) acquire(ctx context.Context, e *entry, job, now bool) (*phppool.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := false
	leave := func() {
		if waiting {
			waiting = false
			if e.waiters--; e.waiters == 0 {
				s.dequeue(e)
			}
		}
	}
	defer leave()
	for {
		if s.life == nil || e.gone {
			return nil, phppool.ErrStopped
		}
		t := s.clk.Now()
		switch {
		case e.pool != nil && !(job && e.draining):
			e.inUse++
			e.lastUsed = t
			return e.pool, nil
		case !e.busy() && e.coolingDown(t):
			return nil, &StartError{Err: e.err, RetryAt: e.retryAt, FailedStarts: e.failedStarts}
		case now:
			return nil, fmt.Errorf("%w: the site's PHP pool is not running", workflow.ErrPHPNotReady)
		case !e.busy() && s.mayStart(e, t):
			leave()
			s.start(e)
			continue
		}
		if !e.starting && !e.stopping {
			// No pool, or a draining one: a place is needed.
			if !waiting {
				waiting = true
				e.waiters++
			}
			s.enqueue(e, t)
			s.makeRoom(t)
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return nil, context.Cause(ctx)
		}
	}
}

// release ends a call acquire let run.
func (s *Set) release(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.inUse--
	now := s.clk.Now()
	e.lastUsed = now
	if e.inUse == 0 && e.draining && e.pool != nil {
		s.log.Info("PHP pool drained; its place goes to a waiting site", "sites", e.label())
		s.stopPool(e)
	}
	s.makeRoom(now)
}

// start starts e's pool (s.mu held, released during the start).
func (s *Set) start(e *entry) {
	s.dequeue(e)
	e.starting = true
	s.alive++
	s.peak = max(s.peak, s.alive)
	life, log := s.life, s.log.With("sites", e.label())
	s.mu.Unlock()
	pool, err := phppool.New(e.cfg, log)
	if err == nil {
		if err = pool.Start(life); err != nil {
			err = fmt.Errorf("--php: %w", err)
		}
	}
	s.mu.Lock()
	e.starting = false
	now := s.clk.Now()
	if err != nil {
		s.alive--
		e.err, e.retryAt = err, now.Add(s.cfg.Retry)
		e.failedStarts++
		s.log.Warn("PHP pool failed to start; tried again by a PHP job after next_try_in", "sites", e.label(), "err", err,
			"next_try_in", s.cfg.Retry, "failed_starts", e.failedStarts)
	} else {
		e.pool, e.poolDone = pool, make(chan struct{})
		e.startedAt, e.lastUsed, e.err, e.failedStarts = now, now, nil, 0
		e.starts++
		go s.watch(e, pool, e.poolDone)
	}
	s.broadcast()
}

// watch stops a pool that gave up, so the next call starts a fresh one
// after Retry rather than failing on it for good.
func (s *Set) watch(e *entry, pool *phppool.Pool, done <-chan struct{}) {
	select {
	case <-pool.GaveUp():
	case <-done:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.pool != pool {
		return
	}
	e.err, e.retryAt = pool.Err(), s.clk.Now().Add(s.cfg.Retry)
	s.log.Error("PHP pool gave up; it is started again on demand", "sites", e.label(), "err", e.err, "after", s.cfg.Retry)
	s.stopPool(e)
}

// stopPool stops e's pool in the background (s.mu held); it counts as
// alive until its processes are gone.
func (s *Set) stopPool(e *entry) {
	// life is set: a pool exists only between Start and the end of Stop.
	pool, done, life := e.pool, e.poolDone, s.life
	e.pool, e.poolDone, e.draining, e.stopping = nil, nil, false, true
	go func() {
		ctx, cancel := context.WithTimeout(life, stopWait)
		err := pool.Stop(ctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("stopping a PHP pool", "err", err)
		}
		close(done)
		s.mu.Lock()
		defer s.mu.Unlock()
		e.stopping = false
		s.alive--
		s.broadcast()
	}()
}

// mayStart reports whether e may start its pool now: there is a place, and
// no key queued before it wants one of the places left.
func (s *Set) mayStart(e *entry, now time.Time) bool {
	free := s.cfg.Max - s.alive
	ahead := 0
	for _, q := range s.queue {
		if q == e {
			break
		}
		if q.startable(now) {
			ahead++
		}
	}
	return ahead < free
}

// makeRoom has as many pools give their place away as the queued keys
// need beyond the free places and those being given up already: idle
// ones first (least recently used; no call for idleGrace, or their turn
// is over), then the busy one whose turn is longest over, drained.
func (s *Set) makeRoom(now time.Time) {
	want := 0
	for _, q := range s.queue {
		if q.startable(now) {
			want++
		}
	}
	if want == 0 {
		return
	}
	freeing := 0
	for _, e := range s.entries {
		if e.stopping || e.draining {
			freeing++
		}
	}
	for need := want - (s.cfg.Max - s.alive) - freeing; need > 0; need-- {
		var idle, turnOver *entry
		for _, e := range s.entries {
			if e.pool == nil || e.draining {
				continue
			}
			over := now.Sub(e.startedAt) >= s.cfg.Turn
			if e.inUse == 0 && (over || now.Sub(e.lastUsed) >= idleGrace) && (idle == nil || e.lastUsed.Before(idle.lastUsed)) {
				idle = e
			}
			if over && (turnOver == nil || e.startedAt.Before(turnOver.startedAt)) {
				turnOver = e
			}
		}
		switch {
		case idle != nil:
			s.log.Info("PHP pools at the cap: stopping the least recently used idle one for a waiting site", "sites", idle.label(), "max", s.cfg.Max)
			s.stopPool(idle)
		case turnOver != nil:
			s.log.Info("PHP pools at the cap: draining the pool whose turn is over for a waiting site", "sites", turnOver.label(), "max", s.cfg.Max)
			turnOver.draining = true
			if turnOver.inUse == 0 {
				s.stopPool(turnOver)
			}
		default:
			return // every pool is within its turn: the reaper looks again
		}
	}
}

// enqueue puts e at the end of the queue for a place, unless it is in it.
func (s *Set) enqueue(e *entry, now time.Time) {
	if e.queued {
		return
	}
	e.queued, e.waitingSince = true, now
	s.queue = append(s.queue, e)
	s.log.Warn("PHP pools at the cap: the site's PHP jobs wait for a place", "sites", e.label(), "max", s.cfg.Max, "queued", len(s.queue))
}

func (s *Set) dequeue(e *entry) {
	if !e.queued {
		return
	}
	e.queued = false
	s.queue = slices.DeleteFunc(s.queue, func(q *entry) bool { return q == e })
}

// broadcast wakes every waiter to look again (s.mu held).
func (s *Set) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}
