package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
)

// tickerService runs a round at start and then every Interval until Stop.
type tickerService struct {
	name     string
	interval time.Duration
	log      *slog.Logger
	clock    clock.Clock
	round    func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *tickerService) start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			s.round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (s *tickerService) stop() {
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
