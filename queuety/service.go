package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
)

// service is one background loop of a Worker (heartbeater, rescuer,
// deadlines, wait sweeper, signal poller, scheduler, retention, session
// agent). Start launches it and fails only before anything runs; ctx
// carries values, not the loop's life. Stop ends it and waits for a round
// under way. Worker.Start starts its services in order and, when one
// fails, stops those already started (startServices).
type service interface {
	Start(ctx context.Context) error
	Stop()
}

// startServices starts svcs in order; when one fails, the ones already
// started are stopped again, last first, and its error is returned.
func startServices(ctx context.Context, svcs []service) error {
	for i, s := range svcs {
		if err := s.Start(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				svcs[j].Stop()
			}
			return err
		}
	}
	return nil
}

// stopServices stops svcs in order.
func stopServices(svcs []service) {
	for _, s := range svcs {
		s.Stop()
	}
}

// tickerService runs a round at start (unless skipFirst) and then on every
// tick of its clock, every interval, until Stop. The round gets the time
// of its tick.
type tickerService struct {
	name      string
	interval  time.Duration
	log       *slog.Logger
	clock     clock.Clock
	skipFirst bool
	round     func(ctx context.Context, now time.Time)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start launches the loop; a second Start does nothing. It never fails.
func (s *tickerService) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return nil
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	t := s.clock.NewTicker(s.interval)
	go func() {
		defer close(s.done)
		defer t.Stop()
		if !s.skipFirst {
			s.round(ctx, s.clock.Now())
		}
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C():
				s.round(ctx, now)
			}
		}
	}()
	return nil
}

// Stop ends the loop and waits for a round under way; it does nothing on
// a service that never started.
func (s *tickerService) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
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
