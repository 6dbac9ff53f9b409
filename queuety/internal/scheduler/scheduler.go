package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
)

// DefaultInterval is how often a worker runs the scheduler tick: the
// plugin's worker loop ticks every 60 s.
const DefaultInterval = 60 * time.Second

// TickTimeout bounds one tick.
const TickTimeout = time.Minute

// Params builds a Scheduler.
type Params struct {
	Interval time.Duration
	Log      *slog.Logger
	Clock    clock.Clock
	// Tick runs one tick (Client.TickSchedules).
	Tick func(ctx context.Context) (Result, error)
	// DebugRow, when set, writes the plugin's "Running scheduler tick."
	// debug row before each tick (QUEUETY_DEBUG); its failure costs the
	// tick nothing.
	DebugRow func(ctx context.Context) error
}

// Scheduler runs the plugin's scheduler tick inside `work`: at start and
// every Interval (60 s, as the plugin's worker loop). Ticks of other
// daemons and of PHP workers on the same table are safe (see Tick).
type Scheduler struct {
	p    Params
	loop startstop.Loop
	mu   sync.Mutex // one tick at a time: RunOnce may run beside the loop
	// warned holds the rows already reported as unreadable, with the
	// expression reported, so a bad row is logged once, not every minute.
	// Only the loop's rounds (or a test's RunOnce) touch it.
	warned map[int64]string
	// TestSignals report each tick to tests.
	TestSignals Signals
}

// Signals are what a Scheduler reports to tests.
type Signals struct {
	// Ticked carries each tick's result.
	Ticked startstop.Signal[Result]
}

// New ticks at start and then every interval; its Stop waits for a tick
// under way: each row's transaction is short.
func New(p *Params) *Scheduler {
	s := &Scheduler{p: *p, warned: map[int64]string{}}
	if s.p.Log == nil {
		s.p.Log = slog.New(slog.DiscardHandler)
	}
	s.loop = startstop.Loop{Name: "scheduler", Every: s.p.Interval, Log: s.p.Log, Clock: s.p.Clock,
		Round: func(ctx context.Context, _ time.Time) { s.RunOnce(ctx) }}
	return s
}

// Interval is how often the scheduler ticks.
func (s *Scheduler) Interval() time.Duration { return s.p.Interval }

// Start ticks now and then every interval.
func (s *Scheduler) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Loop is the scheduler's loop, for an owner that kicks its ticks after the
// first (startstop.Loop.Kicked, before Start): queuety.Sites looks at the
// schedules of every site of a server in one statement, and ticks only the
// sites with a due row.
func (s *Scheduler) Loop() *startstop.Loop { return &s.loop }

// Stop ends the loop and waits for a tick under way.
func (s *Scheduler) Stop() { s.loop.Stop() }

// RunOnce runs one tick, logging what it did and the rows it could not
// read (once each).
func (s *Scheduler) RunOnce(ctx context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, TickTimeout)
	defer cancel()
	if s.p.DebugRow != nil {
		if err := s.p.DebugRow(ctx); err != nil {
			s.p.Log.Warn("could not write the scheduler tick's debug row", "err", err)
		}
	}
	res, err := s.p.Tick(ctx)
	if err != nil {
		s.p.Log.Warn("scheduler tick failed; the rows stay due for the next tick", "err", err, "dispatched", res.Dispatched)
	}
	for _, u := range res.Unreadable {
		if s.warned[u.ID] == u.Err {
			continue
		}
		s.warned[u.ID] = u.Err
		s.p.Log.Warn("schedule left alone: its expression cannot be computed here (the plugin's workers still tick it)",
			"schedule", u.ID, "handler", u.Handler, "err", u.Err)
	}
	if res.Dispatched+res.Skipped > 0 {
		s.p.Log.Debug("scheduler tick", "dispatched", res.Dispatched, "skipped", res.Skipped, "waiting", res.Waiting)
	}
	s.TestSignals.Ticked.Signal(res)
	return res
}
