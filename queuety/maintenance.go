package queuety

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/queuety/internal/maintenance"
	store "github.com/queuety-go/queuety/sql"
)

// The worker's maintenance loops live in queuety/internal/maintenance,
// each built from a params struct; what follows adapts the Client's sweeps
// to them, so no loop holds a Client or a Worker.

// newWaitSweeper returns a sweeper running Engine.SweepWaiting every
// interval (every waiting_for_workflows workflow, and run_workflow parents
// whose child is terminal, re-evaluated: a wake-up PHP lost to a race). A
// nil logger discards, a nil clock is the wall clock.
func newWaitSweeper(e *engine.Engine, interval time.Duration, log *slog.Logger, clk Clock) *maintenance.WaitSweeper {
	return maintenance.NewWaitSweeper(&maintenance.WaitSweeperParams{Interval: interval, Log: log, Clock: clk,
		Sweep: e.SweepWaiting})
}

// newSignalPoller returns a poller running Engine.PollSignals every
// interval from a watermark, and every maintenance.DefaultSignalFullScanEvery
// rounds from the start (a signal row whose id was taken before a higher
// one but committed after it is otherwise skipped).
func newSignalPoller(e *engine.Engine, interval time.Duration, log *slog.Logger, clk Clock) *maintenance.SignalPoller {
	return maintenance.NewSignalPoller(&maintenance.SignalPollerParams{Interval: interval, Log: log, Clock: clk,
		Poll: e.PollSignals})
}

// ErrRetentionLocked is returned by Sweep when another process holds the
// retention lock of this database.
var ErrRetentionLocked = maintenance.ErrRetentionLocked

// newRescuer is the stale sweep of a worker over reg, held off for two
// heartbeat intervals after troubleAt (the worker's last lost connection).
func newRescuer(c *Client, reg *Registry, log *slog.Logger, troubleAt func() int64) *maintenance.Rescuer {
	p := &maintenance.RescuerParams{Schedule: c.cfg.RescueSchedule, Log: log, Clock: c.cfg.Clock,
		TroubleAt: troubleAt, HoldOff: 2 * c.cfg.HeartbeatInterval,
		Recover: func(ctx context.Context) (int, int, error) {
			res, err := c.RecoverStale(ctx, reg)
			return res.Retried, res.Buried, err
		}}
	if o := sweepObserver(c.cfg.Observer); o != nil {
		p.Observe = o.ObserveRescue
	}
	return maintenance.NewRescuer(p)
}

// newRetention is the retention sweep of policy.
func newRetention(c *Client, policy RetentionPolicy, log *slog.Logger) *maintenance.Retention {
	p := &maintenance.RetentionParams{Schedule: c.cfg.RetentionSchedule, Log: log, Clock: c.cfg.Clock,
		Sweep: func(ctx context.Context) (map[store.RetentionKind]int, error) {
			deleted, err := c.Sweep(ctx, policy)
			return storeRetentionCounts(deleted), err
		}}
	if o := sweepObserver(c.cfg.Observer); o != nil {
		p.Observe = func(result string, deleted map[store.RetentionKind]int) {
			o.ObserveRetention(result, retentionCounts(deleted))
		}
	}
	return maintenance.NewRetention(p)
}

// newDeadlineChecker fails the workflows past their deadline_at every
// Config.DeadlineInterval, with e: the Client's engine over the worker's
// registry (Client.CheckDeadlines), given once when the loop is built
// rather than looked up each round.
func newDeadlineChecker(e *engine.Engine, cfg Config, log *slog.Logger) *maintenance.DeadlineChecker {
	return maintenance.NewDeadlineChecker(&maintenance.DeadlineParams{Interval: cfg.DeadlineInterval, Log: log,
		Clock: cfg.Clock, Check: e.CheckDeadlines})
}
