package queuety

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/workflow"
)

// WaitSweeper periodically runs Engine.SweepWaiting.
type WaitSweeper struct {
	svc    tickerService
	engine *engine.Engine
}

// newWaitSweeper returns a sweeper running every interval (a nil logger
// discards, a nil clock is the wall clock).
func newWaitSweeper(engine *engine.Engine, interval time.Duration, log *slog.Logger, clk clock.Clock) *WaitSweeper {
	s := &WaitSweeper{engine: engine}
	s.svc = tickerService{name: "wait sweeper", interval: interval, log: orDiscard(log), clock: orReal(clk)}
	s.svc.round = func(ctx context.Context, _ time.Time) { _, _ = s.RunOnce(ctx) }
	return s
}

// Start runs a sweep now and then every interval, until Stop. ctx only
// carries values; Stop ends the service.
func (s *WaitSweeper) Start(ctx context.Context) error { return s.svc.Start(ctx) }

// Stop ends the service and waits for a running sweep.
func (s *WaitSweeper) Stop() { s.svc.Stop() }

// RunOnce sweeps once, logging what it settled and what failed.
func (s *WaitSweeper) RunOnce(ctx context.Context) (workflow.SweepResult, error) {
	began := s.svc.clock.Now()
	res, err := s.engine.SweepWaiting(ctx)
	if err != nil && ctx.Err() == nil {
		s.svc.log.Warn("wait sweep failed; will retry", "err", err)
	}
	if res.Settled > 0 {
		s.svc.log.Info("wait sweeper resumed waiting workflows", "checked", res.Checked, "settled", res.Settled,
			"took", s.svc.clock.Now().Sub(began))
	}
	return res, err
}
