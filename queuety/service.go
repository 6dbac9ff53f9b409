package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
)

// service is one background loop of a Worker (heartbeater, rescuer,
// deadlines, wait sweeper, signal poller, scheduler, retention, session
// agent, webhook notifier), in the one shape of startstop.Service.
// Worker.Start starts its services in order and, when one fails, stops
// those already started (startServices).
type service = startstop.Service

// startServices starts svcs in order; when one fails, the ones already
// started are stopped again, last first, and its error is returned.
func startServices(ctx context.Context, svcs []service) error { return startstop.StartAll(ctx, svcs) }

// stopServices stops svcs in order.
func stopServices(svcs []service) { startstop.StopAll(svcs) }

// tickerService is a startstop.Loop on an interval, in the shape the
// worker's own loops (the heartbeater) build it: a round at start (unless
// skipFirst) and then on every tick of its clock, until Stop. The round
// gets the loop's ctx, cancelled by Stop, and the time of its tick.
type tickerService struct {
	name      string
	interval  time.Duration
	log       *slog.Logger
	clock     clock.Clock
	skipFirst bool
	round     func(ctx context.Context, now time.Time)

	once sync.Once
	loop startstop.Loop
}

// Start launches the loop; a second Start does nothing. It never fails.
func (s *tickerService) Start(ctx context.Context) error {
	s.once.Do(func() {
		s.loop = startstop.Loop{Name: s.name, Every: s.interval, Log: s.log, Clock: s.clock,
			SkipFirst: s.skipFirst, Round: s.round}
	})
	return s.loop.Start(ctx)
}

// Stop ends the loop and waits for a round under way; it does nothing on
// a service that never started.
func (s *tickerService) Stop() { s.loop.Stop() }

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
