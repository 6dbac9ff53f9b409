package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/workflow"
)

// The workflow services of `work --workflows` (DESIGN.md §4): PHP wakes a
// waiting workflow only from the process that unblocked it, so nothing
// retries a wake-up that raced a commit, and a signal row inserted by a
// process that does not evaluate waits (plain SQL, a bridge) wakes nobody.
// WaitSweeper re-evaluates every waiting_for_workflows workflow (and
// run_workflow parents whose child is terminal); SignalPoller re-evaluates
// waiting_for_signal workflows that received new signal rows.

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

// WaitSweeper periodically runs Engine.SweepWaiting.
type WaitSweeper struct {
	svc    tickerService
	engine *workflow.Engine
}

// NewWaitSweeper returns a sweeper running every interval (a nil logger
// discards, a nil clock is the wall clock).
func NewWaitSweeper(engine *workflow.Engine, interval time.Duration, log *slog.Logger, clk clock.Clock) *WaitSweeper {
	s := &WaitSweeper{engine: engine}
	s.svc = tickerService{name: "wait sweeper", interval: interval, log: orDiscard(log), clock: orReal(clk)}
	s.svc.round = func(ctx context.Context) { _, _ = s.RunOnce(ctx) }
	return s
}

// Start runs a sweep now and then every interval, until Stop. ctx only
// carries values; Stop ends the service.
func (s *WaitSweeper) Start(ctx context.Context) { s.svc.start(ctx) }

// Stop ends the service and waits for a running sweep.
func (s *WaitSweeper) Stop() { s.svc.stop() }

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

// SignalPoller periodically runs Engine.PollSignals from a watermark, and
// every fullEvery rounds from the start (a signal row whose id was taken
// before a higher one but committed after it is otherwise skipped).
type SignalPoller struct {
	svc    tickerService
	engine *workflow.Engine

	mu        sync.Mutex
	mark      int64
	rounds    int
	fullEvery int
}

// DefaultSignalFullScanEvery is how many polls pass between two polls from
// the first signal.
const DefaultSignalFullScanEvery = 30

// NewSignalPoller returns a poller running every interval.
func NewSignalPoller(engine *workflow.Engine, interval time.Duration, log *slog.Logger, clk clock.Clock) *SignalPoller {
	p := &SignalPoller{engine: engine, fullEvery: DefaultSignalFullScanEvery}
	p.svc = tickerService{name: "signal poller", interval: interval, log: orDiscard(log), clock: orReal(clk)}
	p.svc.round = func(ctx context.Context) { _, _ = p.RunOnce(ctx) }
	return p
}

// Start polls now (from the first signal) and then every interval.
func (p *SignalPoller) Start(ctx context.Context) { p.svc.start(ctx) }

// Stop ends the service and waits for a running poll.
func (p *SignalPoller) Stop() { p.svc.stop() }

// RunOnce polls once and returns how many waits it settled.
func (p *SignalPoller) RunOnce(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	after := p.mark
	if p.rounds%p.fullEvery == 0 {
		after = 0
	}
	p.rounds++
	mark, settled, err := p.engine.PollSignals(ctx, after)
	if err != nil && ctx.Err() == nil {
		p.svc.log.Warn("signal poll failed; will retry", "err", err)
	}
	p.mark = max(p.mark, mark)
	if settled > 0 {
		p.svc.log.Info("signal poller resumed waiting workflows", "settled", settled)
	}
	return settled, err
}

// workflowServices are the services a Worker with Config.Workflows runs.
type workflowServices struct {
	sweeper *WaitSweeper
	poller  *SignalPoller
}

func newWorkflowServices(engine *workflow.Engine, cfg Config, log *slog.Logger) *workflowServices {
	s := &workflowServices{}
	if cfg.WaitSweepInterval > 0 {
		s.sweeper = NewWaitSweeper(engine, cfg.WaitSweepInterval, log.With("service", "wait-sweeper"), cfg.Clock)
	}
	if cfg.SignalPollInterval > 0 {
		s.poller = NewSignalPoller(engine, cfg.SignalPollInterval, log.With("service", "signal-poller"), cfg.Clock)
	}
	engine.OnWakeError(func(id int64, err error) {
		log.Warn("waking workflows after a terminal transition failed; the wait sweeper retries", "workflow", id, "err", err)
	})
	return s
}

func (s *workflowServices) Start(ctx context.Context) {
	if s.sweeper != nil {
		s.sweeper.Start(ctx)
	}
	if s.poller != nil {
		s.poller.Start(ctx)
	}
}

func (s *workflowServices) Stop() {
	if s.sweeper != nil {
		s.sweeper.Stop()
	}
	if s.poller != nil {
		s.poller.Stop()
	}
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
