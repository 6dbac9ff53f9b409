package queuety

import (
	"context"
	"log/slog"

	"github.com/queuety-go/queuety/workflow"
)

// The workflow services of `work --workflows` (DESIGN.md §4): PHP wakes a
// waiting workflow only from the process that unblocked it, so nothing
// retries a wake-up that raced a commit, and a signal row inserted by a
// process that does not evaluate waits (plain SQL, a bridge) wakes nobody.
// WaitSweeper re-evaluates every waiting_for_workflows workflow (and
// run_workflow parents whose child is terminal); SignalPoller re-evaluates
// waiting_for_signal workflows that received new signal rows.

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
