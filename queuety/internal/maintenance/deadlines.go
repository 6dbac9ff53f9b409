package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
)

// DeadlineParams builds a DeadlineChecker.
type DeadlineParams struct {
	Interval time.Duration
	Log      *slog.Logger
	Clock    clock.Clock
	// Check fails the running workflows past their deadline_at and
	// returns how many (Client.CheckDeadlines over the worker's registry).
	Check func(ctx context.Context) (int, error)
}

// DeadlineTimeout bounds one deadline check.
const DeadlineTimeout = time.Minute

// DeadlineChecker runs Queuety's check_deadlines inside `work` with
// Config.Workflows: every Config.DeadlineInterval, running workflows past
// their deadline_at are failed (on_deadline, compensations).
type DeadlineChecker struct {
	p    DeadlineParams
	loop startstop.Loop
	// TestSignals report each check to tests.
	TestSignals DeadlineSignals
}

// DeadlineSignals are what a DeadlineChecker reports to tests.
type DeadlineSignals struct {
	// Checked carries how many workflows each check failed.
	Checked startstop.Signal[int]
}

// NewDeadlineChecker checks at start and then every interval.
func NewDeadlineChecker(p *DeadlineParams) *DeadlineChecker {
	d := &DeadlineChecker{p: *p}
	d.p.Log, d.p.Clock = orDiscard(d.p.Log), orReal(d.p.Clock)
	d.loop = startstop.Loop{Name: "deadline checker", Every: d.p.Interval, Log: d.p.Log, Clock: d.p.Clock,
		Round: func(ctx context.Context, _ time.Time) { d.RunOnce(ctx) }}
	return d
}

// Start checks now and then every interval.
func (d *DeadlineChecker) Start(ctx context.Context) error { return d.loop.Start(ctx) }

// Stop ends the loop, cancelling a check under way, and waits for it.
func (d *DeadlineChecker) Stop() { d.loop.Stop() }

// Loop is the deadline checker's loop, for an owner that kicks its rounds after the
// first (startstop.Loop.Kicked, before Start; queuety.Sites).
func (d *DeadlineChecker) Loop() *startstop.Loop { return &d.loop }

// RunOnce runs one check and returns how many workflows it failed.
func (d *DeadlineChecker) RunOnce(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, DeadlineTimeout)
	defer cancel()
	n, err := d.p.Check(ctx)
	if err != nil {
		d.p.Log.Warn("workflow deadline check failed", "err", err)
	}
	if n > 0 {
		d.p.Log.Warn("workflows failed by their deadline", "count", n)
	}
	d.TestSignals.Checked.Signal(n)
	return n
}
