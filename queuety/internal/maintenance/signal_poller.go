package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
)

// SignalPollerParams builds a SignalPoller.
type SignalPollerParams struct {
	Interval time.Duration
	Log      *slog.Logger // nil discards
	Clock    clock.Clock  // nil: the wall clock
	// Poll re-evaluates the workflows waiting for a signal with a signal
	// row after the id after, and returns the highest id it read and how
	// many waits it settled (the engine's PollSignals).
	Poll func(ctx context.Context, after int64) (mark int64, settled int, err error)
}

// SignalPoller periodically runs the engine's signal poll from a
// watermark, and every fullEvery rounds from the start (a signal row whose
// id was taken before a higher one but committed after it is otherwise
// skipped).
type SignalPoller struct {
	loop startstop.Loop
	poll func(ctx context.Context, after int64) (int64, int, error)

	mu        sync.Mutex
	mark      int64
	rounds    int
	fullEvery int
}

// DefaultSignalFullScanEvery is how many polls pass between two polls from
// the first signal.
const DefaultSignalFullScanEvery = 30

// NewSignalPoller returns a poller running every interval.
func NewSignalPoller(pp *SignalPollerParams) *SignalPoller {
	p := &SignalPoller{poll: pp.Poll, fullEvery: DefaultSignalFullScanEvery}
	p.loop = startstop.Loop{Name: "signal poller", Every: pp.Interval, Log: orDiscard(pp.Log), Clock: orReal(pp.Clock),
		Round: func(ctx context.Context, _ time.Time) { _, _ = p.RunOnce(ctx) }}
	return p
}

// Start polls now (from the first signal) and then every interval.
func (p *SignalPoller) Start(ctx context.Context) error { return p.loop.Start(ctx) }

// Stop ends the service and waits for a running poll.
func (p *SignalPoller) Stop() { p.loop.Stop() }

// Loop is the signal poller's loop, for an owner that kicks its rounds after the
// first (startstop.Loop.Kicked, before Start; queuety.Sites).
func (p *SignalPoller) Loop() *startstop.Loop { return &p.loop }

// From is the signal id the next round polls after: the watermark, or 0
// on a round from the first signal. A batched look asks with it whether
// that round would find a waiting workflow's signal.
func (p *SignalPoller) From() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.from()
}

func (p *SignalPoller) from() int64 {
	if p.rounds%p.fullEvery == 0 {
		return 0
	}
	return p.mark
}

// Skip counts a round that a look found nothing for, as if it had polled
// and settled nothing, so the rounds from the first signal keep their
// cadence. The watermark stays: the look did not read how far the signals
// go.
func (p *SignalPoller) Skip() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rounds++
}

// RunOnce polls once and returns how many waits it settled.
func (p *SignalPoller) RunOnce(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	after := p.from()
	p.rounds++
	mark, settled, err := p.poll(ctx, after)
	if err != nil && ctx.Err() == nil {
		p.loop.Log.Warn("signal poll failed; will retry", "err", err)
	}
	p.mark = max(p.mark, mark)
	if settled > 0 {
		p.loop.Log.Info("signal poller resumed waiting workflows", "settled", settled)
	}
	return settled, err
}
