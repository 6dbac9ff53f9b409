package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
	"github.com/queuety-go/queuety/workflow"
)

// The workflow services of `work --workflows` (DESIGN.md §4): PHP wakes a
// waiting workflow only from the process that unblocked it, so nothing
// retries a wake-up that raced a commit, and a signal row inserted by a
// process that does not evaluate waits (plain SQL, a bridge) wakes nobody.
// WaitSweeper re-evaluates every waiting_for_workflows workflow (and
// run_workflow parents whose child is terminal); SignalPoller re-evaluates
// waiting_for_signal workflows that received new signal rows.

// WaitSweeperParams builds a WaitSweeper.
type WaitSweeperParams struct {
	Interval time.Duration
	Log      *slog.Logger // nil discards
	Clock    clock.Clock  // nil: the wall clock
	// Sweep re-evaluates the waiting workflows once (the engine's
	// SweepWaiting).
	Sweep func(ctx context.Context) (workflow.SweepResult, error)
}

// WaitSweeper periodically runs the engine's wait sweep.
type WaitSweeper struct {
	loop  startstop.Loop
	sweep func(ctx context.Context) (workflow.SweepResult, error)
}

// NewWaitSweeper returns a sweeper running every interval.
func NewWaitSweeper(p *WaitSweeperParams) *WaitSweeper {
	s := &WaitSweeper{sweep: p.Sweep}
	s.loop = startstop.Loop{Name: "wait sweeper", Every: p.Interval, Log: orDiscard(p.Log), Clock: orReal(p.Clock),
		Round: func(ctx context.Context, _ time.Time) { _, _ = s.RunOnce(ctx) }}
	return s
}

// Start runs a sweep now and then every interval, until Stop. ctx only
// carries values; Stop ends the service.
func (s *WaitSweeper) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Stop ends the service and waits for a running sweep.
func (s *WaitSweeper) Stop() { s.loop.Stop() }

// Loop is the wait sweeper's loop, for an owner that kicks its rounds after the
// first (startstop.Loop.Kicked, before Start; queuety.Sites).
func (s *WaitSweeper) Loop() *startstop.Loop { return &s.loop }

// RunOnce sweeps once, logging what it settled and what failed.
func (s *WaitSweeper) RunOnce(ctx context.Context) (workflow.SweepResult, error) {
	began := s.loop.Clock.Now()
	res, err := s.sweep(ctx)
	if err != nil && ctx.Err() == nil {
		s.loop.Log.Warn("wait sweep failed; will retry", "err", err)
	}
	if res.Settled > 0 {
		s.loop.Log.Info("wait sweeper resumed waiting workflows", "checked", res.Checked, "settled", res.Settled,
			"took", s.loop.Clock.Now().Sub(began))
	}
	return res, err
}
