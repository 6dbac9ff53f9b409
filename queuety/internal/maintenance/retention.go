package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/startstop"
	store "github.com/queuety-go/queuety/sql"
)

// ErrRetentionLocked is returned by a retention sweep when another process
// holds the retention lock of this database.
var ErrRetentionLocked = errors.New("another process is sweeping this database")

// RetentionParams builds a Retention.
type RetentionParams struct {
	// Schedule is the sweep's cron spec (startstop.ParseCron); a bad one
	// fails Start.
	Schedule string
	Log      *slog.Logger
	Clock    clock.Clock
	// Sweep runs one sweep of the policy under the database's retention
	// lock (Client.Sweep): ErrRetentionLocked when another process holds
	// it; it returns the rows deleted per kind.
	Sweep func(ctx context.Context) (map[store.RetentionKind]int, error)
	// Observe is told each sweep's result (ok, failed, skipped) and rows
	// (nil: nobody).
	Observe func(result string, deleted map[store.RetentionKind]int)
}

// Retention runs the retention sweep inside `work`: once at start (a
// daemon restarted more often than its schedule fires would otherwise
// never sweep) and then on a cron schedule.
type Retention struct {
	p    RetentionParams
	loop startstop.Loop
	mu   sync.Mutex // one sweep at a time: RunOnce may run beside the loop
	// TestSignals report each sweep's result to tests.
	TestSignals RetentionSignals
}

// RetentionSignals are what a Retention reports to tests.
type RetentionSignals struct {
	// Swept carries each sweep's result: ok, failed, skipped.
	Swept startstop.Signal[string]
}

// NewRetention returns a retention service; Start parses its schedule.
func NewRetention(p *RetentionParams) *Retention {
	r := &Retention{p: *p}
	r.p.Log, r.p.Clock = orDiscard(r.p.Log), orReal(r.p.Clock)
	r.loop = startstop.Loop{Name: "retention", Log: r.p.Log, Clock: r.p.Clock,
		Round: func(ctx context.Context, _ time.Time) { r.RunOnce(ctx) }}
	return r
}

// Start sweeps now and then on the schedule; a bad schedule fails it.
func (r *Retention) Start(ctx context.Context) error {
	return r.loop.StartCron(ctx, r.p.Schedule)
}

// Stop ends a sweep under way at its next statement and waits for it.
func (r *Retention) Stop() { r.loop.Stop() }

// Loop is the retention sweep's loop, for an owner that kicks its rounds after the
// first (startstop.Loop.Kicked, before Start; queuety.Sites).
func (r *Retention) Loop() *startstop.Loop { return &r.loop }

// Idle reports a sweep that a look found nothing for (queuety.Sites: no
// row of any kind past its age) as a sweep that deleted nothing: the
// observer's last successful sweep stays current.
func (r *Retention) Idle() {
	if r.p.Observe != nil {
		r.p.Observe("ok", nil)
	}
}

// RunOnce runs one sweep and returns its result: ok, failed or skipped
// (another process holds the lock).
func (r *Retention) RunOnce(ctx context.Context) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		return "failed"
	}
	start := r.p.Clock.Now()
	res, err := r.p.Sweep(ctx)
	result := "ok"
	switch {
	case errors.Is(err, ErrRetentionLocked):
		result = "skipped"
		r.p.Log.Debug("retention sweep skipped: another process holds the lock")
	case err != nil && ctx.Err() != nil:
		result = "failed"
		r.p.Log.Info("retention sweep interrupted by shutdown", "deleted", res)
	case err != nil:
		result = "failed"
		r.p.Log.Warn("retention sweep failed", "err", err, "deleted", res)
	case len(res) > 0:
		attrs := []any{"took", r.p.Clock.Now().Sub(start)}
		for k, n := range res {
			attrs = append(attrs, string(k), n)
		}
		r.p.Log.Info("retention sweep deleted old rows", attrs...)
	}
	if r.p.Observe != nil {
		r.p.Observe(result, res)
	}
	r.TestSignals.Swept.Signal(result)
	return result
}
