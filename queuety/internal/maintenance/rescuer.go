package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
)

// RescuerParams builds a Rescuer.
type RescuerParams struct {
	// Schedule is the sweep's cron spec (startstop.ParseCron); a bad one
	// fails Start.
	Schedule string
	Log      *slog.Logger
	Clock    clock.Clock
	// Recover runs one stale sweep and returns the jobs it retried and
	// buried (Client.RecoverStale over the worker's registry).
	Recover func(ctx context.Context) (retried, buried int, err error)
	// TroubleAt returns when the worker last lost its database connection
	// (unix nanos of the wall clock, 0: never); no sweep runs until HoldOff
	// has passed since. During an outage no worker could heartbeat, so
	// right after it every running job looks stale; two heartbeat
	// intervals give them all time to refresh their rows (and to write
	// completions that waited). Nil: never.
	TroubleAt func() int64
	HoldOff   time.Duration
	// Observe is told each sweep's recoveries (nil: nobody).
	Observe func(retried, buried int)
}

// RescueTimeout bounds one stale sweep.
const RescueTimeout = time.Minute

// Rescuer runs the stale sweep on a cron schedule inside `work`, and once
// at start so a restart after a crash recovers at once.
type Rescuer struct {
	p    RescuerParams
	loop startstop.Loop
	mu   sync.Mutex // one sweep at a time: RunOnce may run beside the loop
	// TestSignals report each sweep's outcome to tests.
	TestSignals RescuerSignals
}

// RescuerSignals are what a Rescuer reports to tests.
type RescuerSignals struct {
	// Swept carries each sweep's retried and buried counts; a sweep held
	// off or failed sends nothing.
	Swept startstop.Signal[[2]int]
	// Held signals a sweep held off after a lost connection.
	Held startstop.Signal[struct{}]
}

// NewRescuer returns a rescuer; Start parses its schedule.
func NewRescuer(p *RescuerParams) *Rescuer {
	r := &Rescuer{p: *p}
	r.p.Log, r.p.Clock = orDiscard(r.p.Log), orReal(r.p.Clock)
	r.loop = startstop.Loop{Name: "rescuer", Log: r.p.Log, Clock: r.p.Clock,
		Round: func(ctx context.Context, _ time.Time) { r.RunOnce(ctx) }}
	return r
}

// Start sweeps now and then on the schedule; a bad schedule fails it.
func (r *Rescuer) Start(ctx context.Context) error {
	return r.loop.StartCron(ctx, r.p.Schedule)
}

// Stop ends the loop, cancelling a sweep under way, and waits for it.
func (r *Rescuer) Stop() { r.loop.Stop() }

// Loop is the rescuer's loop, for an owner that kicks its rounds after the
// first (startstop.Loop.Kicked, before Start; queuety.Sites).
func (r *Rescuer) Loop() *startstop.Loop { return &r.loop }

// RunOnce runs one stale sweep, unless a lost connection holds it off.
func (r *Rescuer) RunOnce(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p.TroubleAt != nil {
		// The wall clock: TroubleAt is stamped with it where the claim
		// failed, and the hold-off measures the outage, not the schedule.
		if at := r.p.TroubleAt(); at != 0 && time.Since(time.Unix(0, at)) < r.p.HoldOff {
			r.p.Log.Info("stale sweep postponed: the database connection was lost moments ago", "hold_off", r.p.HoldOff)
			r.TestSignals.Held.Signal(struct{}{})
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, RescueTimeout)
	defer cancel()
	retried, buried, err := r.p.Recover(ctx)
	if err != nil {
		r.p.Log.Warn("stale sweep failed", "err", err)
		return
	}
	if r.p.Observe != nil {
		r.p.Observe(retried, buried)
	}
	if retried+buried > 0 {
		r.p.Log.Warn("recovered stale jobs", "retried", retried, "buried", buried)
	}
	r.TestSignals.Swept.Signal([2]int{retried, buried})
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

func orReal(c clock.Clock) clock.Clock {
	if c == nil {
		return clock.Real{}
	}
	return c
}
