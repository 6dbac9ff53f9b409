package queuety

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	imachine "github.com/queuety-go/queuety/queuety/internal/machine"
	"github.com/queuety-go/queuety/queuety/internal/webhooks"
	store "github.com/queuety-go/queuety/sql"
)

// recorder is the result side of a worker: what becomes of an attempt once
// its handler returned. It writes the outcome (a completion through the
// completer, a batch job's with its batch's counters, a failure's retry or
// burial through the stateWriter), counts and observes it, queues its
// webhooks, and runs what the plugin runs after the write: batch callbacks
// (batch.go), a chain's catch (chain_catch.go) and a state machine's
// fail_action (machine.go). Workflow steps are written by the engine; the
// recorder counts and logs what it reports (settleStep).
type recorder struct {
	recorderParams
	// batchTurns orders one batch's callbacks by their commits.
	batchTurns batchTurns
}

// recorderParams are what the recorder writes through and whom it tells.
type recorderParams struct {
	Store  *store.Store
	Writes *stateWriter
	// Jobs holds the attempts settling until their completion is written.
	Jobs *runningSet
	// Complete queues a plain job's completion (the completer), false once
	// the completer stopped.
	Complete func(store.Completion) bool
	// Reg has the Go batch callbacks and chain catches and the PHP pool.
	Reg *Registry
	// Machines runs a buried action job's fail_action.
	Machines *imachine.Runtime
	// Decide is retryOrBury for a step attempt (runner.decideStep).
	Decide  func(row *store.JobRow, err error) engine.Failure
	Log     *slog.Logger
	Observe observers
	Hooks   *webhooks.Notifier // nil: webhooks off
	Stats   *workerCounters
	// MemKB is the per-slot memory figure of a completed row whose process
	// reported none (memorySampler).
	MemKB func() int64
}

func newRecorder(p recorderParams) *recorder { return &recorder{recorderParams: p} }

// record writes the outcome of a plain job's attempt: err is its handler's,
// ctx the attempt's, whose cause says whether Stop or the heartbeater cut
// it. Its slot is still taken; the caller frees it after.
func (r *recorder) record(ctx context.Context, rj *running, o *outcome) {
	switch cause := context.Cause(ctx); {
	case o.err == nil && rj.row.BatchID.Valid:
		r.Observe.observeJob(&rj.row, OutcomeCompleted, o.duration)
		r.completeBatchJob(ctx, rj, o.duration) // with its batch's counters (batch.go)
	case o.err == nil:
		r.Observe.observeJob(&rj.row, OutcomeCompleted, o.duration)
		r.Jobs.settle(rj)
		if !r.Complete(store.Completion{Attempt: rj.job.attempt, Log: r.completedLog(rj, o.duration)}) {
			r.Log.Error("completion after the completer stopped; the stale sweep will retry the job", "job", rj.row.ID)
		}
	case errors.Is(cause, ErrJobLost):
		r.Stats.refused.Add(1)
		r.Log.Warn("job lost while running (rescued or deleted); its result is dropped", "job", rj.row.ID, "err", o.err)
	case errors.Is(cause, ErrShutdown), errors.Is(o.err, errLeaveToPHP):
		r.Writes.handBack(ctx, []store.Attempt{rj.job.attempt})
	default:
		r.fail(ctx, rj, o)
	}
}

// completedLog is the `completed` log row of rj's attempt.
func (r *recorder) completedLog(rj *running, d time.Duration) store.LogRow {
	l := store.LogFor(&rj.row, store.EventCompleted)
	l.Attempt = store.Int(int64(rj.row.Attempts))
	l.DurationMS = store.Int(d.Milliseconds())
	mem := rj.memPeakKB.Load()
	if mem <= 0 {
		mem = r.MemKB()
	}
	l.MemoryPeakKB = store.Int(mem)
	return l
}

// countOutcome updates the counters and logs a written failure, as the
// write f decided it (buried, or retried after f.Delay).
func (r *recorder) countOutcome(rj *running, o *outcome, f store.Failure) {
	row := &rj.row
	if f.Bury {
		r.Stats.buried.Add(1)
		r.Observe.observeJob(row, OutcomeBuried, o.duration)
		r.Log.Warn("job buried", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts, "err", loggedError{o.err})
		return
	}
	r.Stats.retried.Add(1)
	r.Observe.observeJob(row, OutcomeRetried, o.duration)
	r.Log.Info("job failed; retrying", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts,
		"in", f.Delay, "err", loggedError{o.err})
}

// sessionBuried counts and reports jobs the session claim buried itself,
// like any burial.
func (r *recorder) sessionBuried(rows []store.JobRow) {
	r.Stats.buried.Add(int64(len(rows)))
	for i := range rows {
		r.Observe.observeJob(&rows[i], OutcomeBuried, 0)
	}
}
