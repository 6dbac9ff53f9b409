package queuety

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/queuety/internal/webhooks"
	store "github.com/queuety-go/queuety/sql"
)

// engineHost is a Worker as the Host of its workflow engine
// (engine.Host): the one way the engine asks the worker about itself.
type engineHost struct{ w *Worker }

// Owner is the worker's reserved_by value.
func (h engineHost) Owner() string { return h.w.id }

// Accepting is false once the worker stops (claims cancelled): local steps
// its completions reach are then left pending for the claim, so that Stop
// never waits on a chain of local steps; attempts already started finish
// first.
func (h engineHost) Accepting() bool { return !h.w.claim.stopped() }

// Chains lets the engine chain the steps this worker would claim next
// (internal/engine/chain.go): while it takes work, on a queue it serves that is
// known not to be paused. It runs inside the step transaction, so it reads
// only what the claim loop last read: with no recent read of the paused
// queues it declines, and the step goes through the claim, which reads
// them.
func (h engineHost) Chains(queue, _ string) bool {
	w := h.w
	if !w.claim.claiming() || !slices.Contains(w.cfg.Queues, queue) || w.cfg.QueueCostBudgets[queue] > 0 || w.cfg.Debug {
		return false
	}
	paused, known := w.claim.paused.known(queue)
	return known && !paused
}

// StepTimeout is the step job's attempt time limit (executor.stepTimeout).
func (h engineHost) StepTimeout(job *store.JobRow) (time.Duration, error) {
	return h.w.run.Exec.stepTimeout(job)
}

// JobContext is the attempts' lifetime (runner.jobsCtx): cancelled
// (ErrShutdown) only when the shutdown grace is over; a local attempt cut
// there is replayed. It is no caller's context: the local attempts run
// after the step transaction that reached them committed.
func (h engineHost) JobContext() context.Context { return h.w.run.jobsCtx }

// MemoryKB is the worker's per-slot memory figure (memory.go).
func (h engineHost) MemoryKB() int64 { return h.w.mem.perSlotKB() }

// engineConfig is the configuration of the worker's workflow engine: the
// client's for the registry, with the worker as its host.
func (w *Worker) engineConfig() engine.EngineConfig {
	cfg := w.c.engineConfig(w.reg)
	cfg.Host = engineHost{w}
	cfg.ChainSteps = w.cfg.WorkflowChainSteps
	cfg.LocalLease = w.cfg.StaleTimeout
	cfg.StepBatch = w.cfg.WorkflowStepBatch
	cfg.Logger = w.log
	cfg.OnWakeError = wakeErrorLogger(w.log)
	if hooks := w.hooks; hooks != nil {
		cfg.OnStepFailure = func(f engine.StepFailure) { hooks.StepFailure(webhooks.StepFailure(f)) }
	}
	return cfg
}

func wakeErrorLogger(log *slog.Logger) func(int64, error) {
	return func(id int64, err error) {
		log.Warn("waking workflows after a terminal transition failed; the wait sweeper retries", "workflow", id, "err", err)
	}
}
