package startstop

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuety-go/queuety/internal/clock"
)

// Loop is a Service that runs Round at start (unless SkipFirst) and then on
// its schedule, until Stop: every Every of Clock, or at the times of Cron.
// Set the fields before Start and leave them alone after.
type Loop struct {
	Name string
	Log  *slog.Logger // nil discards
	// Clock gives the time and the ticks (nil: the wall clock).
	Clock clock.Clock
	// Every runs a round every Every of Clock, on one ticker: a round that
	// overruns gets one tick for all it missed, as time.Ticker.
	Every time.Duration
	// Cron, when set, runs a round at each time it gives instead, counted
	// from the last round's time as robfig/cron counts from its last
	// firing; a firing missed while a round runs is skipped, as with
	// robfig/cron's SkipIfStillRunning. The clock gives the time, the
	// schedule only computes the next one (ParseCron).
	Cron      cron.Schedule
	SkipFirst bool
	// Kicked runs the first round (unless SkipFirst) and then one each
	// time Kick is called,
	// instead of on the schedule: the loop's owner keeps to the schedule
	// (Next) and kicks only the rounds worth running (queuety.Sites, which
	// first looks at the tables of many sites in one statement and kicks
	// the loops of those with something to do). The rounds still run here,
	// on the loop's context, so Stop cancels one under way and waits for it.
	Kicked bool
	// Round is one round: ctx is cancelled by Stop, now is the time of its
	// tick on Clock.
	Round func(ctx context.Context, now time.Time)
	// Signals are for tests (Signal.Init before Start).
	Signals LoopSignals

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // Kicked: a round asked for
}

// LoopSignals are what a Loop reports to a test.
type LoopSignals struct {
	// RoundDone carries the tick time of each round that ended.
	RoundDone Signal[time.Time]
	// Waiting carries the time a Cron loop waits for next, once it waits:
	// a test moves a fake clock only after it, or the move is missed.
	Waiting Signal[time.Time]
}

// ParseCron parses a cron spec as `work` always did: five fields or a
// descriptor (@hourly, @every 1h), robfig/cron's standard parser.
func ParseCron(spec string) (cron.Schedule, error) { return cron.ParseStandard(spec) }

// StartCron parses spec (ParseCron) as the loop's Cron and starts it; a
// bad spec fails the start and starts nothing.
func (l *Loop) StartCron(ctx context.Context, spec string) error {
	sched, err := ParseCron(spec)
	if err != nil {
		return err
	}
	l.Cron = sched
	return l.Start(ctx)
}

// Start launches the loop; a second Start does nothing. It never fails.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	if l.Clock == nil {
		l.Clock = clock.Real{}
	}
	if l.Log == nil {
		l.Log = slog.New(slog.DiscardHandler)
	}
	// The loop lives until Stop, not until the caller's ctx ends; its
	// values (a logger's, a trace's) stay.
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	// One kick waits while a round runs: kicks during a round ask for one
	// more, as ticks missed by a slow reader of a time.Ticker give one.
	l.kick = make(chan struct{}, 1)
	var t clock.Ticker
	if l.Cron == nil {
		// Made before the goroutine, so a fake clock moved right after
		// Start already ticks it.
		t = l.Clock.NewTicker(l.Every)
	}
	go func() {
		defer close(l.done)
		if t != nil {
			defer t.Stop()
		}
		last := l.Clock.Now()
		if !l.SkipFirst {
			l.RunOnce(ctx, last)
		}
		if l.Kicked {
			l.kicked(ctx)
			return
		}
		for {
			var ok bool
			if t != nil {
				last, ok = l.tick(ctx, t)
			} else {
				last, ok = l.waitCron(ctx, last)
			}
			if !ok {
				return
			}
			l.RunOnce(ctx, last)
		}
	}()
	return nil
}

// RunOnce runs one round now, on the caller's goroutine, and signals it.
func (l *Loop) RunOnce(ctx context.Context, now time.Time) {
	l.Round(ctx, now)
	l.Signals.RoundDone.Signal(now)
}

// kicked runs a round for each Kick, until Stop.
func (l *Loop) kicked(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
			l.RunOnce(ctx, l.Clock.Now())
		}
	}
}

// Kick asks a Kicked loop for a round now, on its own goroutine; it never
// waits. A loop not started, or stopped, ignores it.
func (l *Loop) Kick() {
	l.mu.Lock()
	kick := l.kick
	l.mu.Unlock()
	if kick == nil {
		return
	}
	select {
	case kick <- struct{}{}:
	default:
	}
}

// Next is when the schedule runs the round after one at t: t plus Every,
// or Cron's next time after t (set by StartCron, so known once started).
func (l *Loop) Next(t time.Time) time.Time {
	if l.Cron != nil {
		return l.Cron.Next(t)
	}
	return t.Add(l.Every)
}

// tick waits for the ticker's next tick, or for Stop.
func (l *Loop) tick(ctx context.Context, t clock.Ticker) (time.Time, bool) {
	select {
	case <-ctx.Done():
		return time.Time{}, false
	case now := <-t.C():
		return now, true
	}
}

// waitCron waits until the cron schedule's next time after last, on the
// clock, or for Stop; the times that passed while the last round ran are
// skipped, as robfig/cron skips the firings of a job still running. A
// schedule that never fires again waits for Stop.
func (l *Loop) waitCron(ctx context.Context, last time.Time) (time.Time, bool) {
	now := l.Clock.Now()
	at := l.Cron.Next(last)
	for !at.IsZero() && !at.After(now) {
		at = l.Cron.Next(at)
	}
	if at.IsZero() {
		<-ctx.Done()
		return time.Time{}, false
	}
	// A ticker stopped after its first tick is the clock's timer.
	t := l.Clock.NewTicker(max(at.Sub(now), time.Nanosecond))
	defer t.Stop()
	l.Signals.Waiting.Signal(at)
	return l.tick(ctx, t)
}

// Stop ends the loop and waits for a round under way; it does nothing on
// a loop that never started.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}
