package queuety

import (
	"log/slog"

	"github.com/queuety-go/queuety/internal/engine"
)

// The workflow services of `work --workflows` (DESIGN.md §4): PHP wakes a
// waiting workflow only from the process that unblocked it, so nothing
// retries a wake-up that raced a commit, and a signal row inserted by a
// process that does not evaluate waits (plain SQL, a bridge) wakes nobody.
// The wait sweeper re-evaluates every waiting_for_workflows workflow (and
// run_workflow parents whose child is terminal); the signal poller re-evaluates
// waiting_for_signal workflows that received new signal rows.

// newWorkflowServices are the loops a Worker with Config.Workflows runs:
// the wait sweeper and the signal poller, each when its interval is set.
func newWorkflowServices(engine *engine.Engine, cfg Config, log *slog.Logger) []service {
	var s []service
	if cfg.WaitSweepInterval > 0 {
		s = append(s, newWaitSweeper(engine, cfg.WaitSweepInterval, log.With("service", "wait-sweeper"), cfg.Clock))
	}
	if cfg.SignalPollInterval > 0 {
		s = append(s, newSignalPoller(engine, cfg.SignalPollInterval, log.With("service", "signal-poller"), cfg.Clock))
	}
	return s
}
