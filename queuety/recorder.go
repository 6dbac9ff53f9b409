package queuety

import (
	"context"
	"errors"
	"github.com/queuety-go/queuety/workflow"
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

// record writes the outcome o of a plain job's attempt. ctx is the
// attempt's, whose cause says whether Stop or the heartbeater cut it. Its
// slot is still taken; the caller frees it after.
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

// fail records a failed attempt. A failure the server refuses to store (a
// value it will not take although FitText cut it, a trigger, a column
// changed by hand) buries the job with a message saying so, so the attempt
// is never left processing and retried by the stale sweep under a message
// that hides the cause.
//
// ctx is the attempt's: what runs after a burial (afterBury) keeps its
// values, not its end.
func (r *recorder) fail(ctx context.Context, rj *running, o *outcome) {
	defer rj.batchTurn.finish() // whatever path is taken below
	f := failure(rj, o)
	applied, cb, err := r.writeJobFailure(ctx, rj, f)
	if err != nil && !retryableWrite(err) {
		r.Log.Error("the server refused this job's failure; burying it", "job", rj.row.ID, "err", err)
		f = refusedWrite(&rj.row, rj.job.attempt, o.duration, "its failure", err, o.err.Error())
		o = &outcome{err: errors.New(f.ErrorMessage), duration: o.duration}
		applied, cb, err = r.writeJobFailure(ctx, rj, f)
	}
	if err != nil {
		r.Log.Error("writing the job's failure failed; the stale sweep will recover the job", "job", rj.row.ID, "err", err)
		return
	}
	if !applied {
		r.Stats.refused.Add(1)
		r.Log.Warn("failure refused: the attempt no longer holds the row", "job", rj.row.ID)
		return
	}
	r.countOutcome(rj, o, f)
	r.notifyFailure(rj, o, f.Bury)
	if f.Bury {
		r.afterBury(ctx, rj, o.err, cb) // chain catch, fail_action, batch callbacks (chain_catch.go)
	}
}

// writeCompletions writes a batch of completions. A batch the server
// refuses (not a lost connection or a deadlock, which persist retries) is
// split and written again in halves, so one row it will not take is found
// and buried alone and never holds back the others.
func (r *recorder) writeCompletions(ctx context.Context, batch []store.Completion) {
	var res store.CompleteResult
	err := r.Writes.persist(ctx, "complete", func(ctx context.Context) error {
		var err error
		res, err = r.Store.CompleteJobs(ctx, batch)
		return err
	})
	switch {
	case err == nil:
	case retryableWrite(err):
		r.Log.Error("writing completions failed; the stale sweep will recover the jobs", "jobs", len(batch), "err", err)
		return
	case len(batch) > 1:
		r.writeCompletions(ctx, batch[:len(batch)/2])
		r.writeCompletions(ctx, batch[len(batch)/2:])
		return
	default:
		c := batch[0]
		r.Log.Error("the server refused this job's completion; burying it", "job", c.ID, "err", err)
		row := &store.JobRow{ID: c.ID, Queue: c.Log.Queue, Handler: c.Log.Handler, Attempts: c.Attempt.Attempt,
			WorkflowID: c.Log.WorkflowID, StepIndex: c.Log.StepIndex}
		d := time.Duration(c.Log.DurationMS.Int64) * time.Millisecond
		if _, err := r.Writes.writeFailure(ctx, refusedWrite(row, c.Attempt, d, "its completion", err, "")); err != nil {
			r.Log.Error("burying it failed too; the stale sweep will recover the job", "job", c.ID, "err", err)
		} else {
			r.Observe.observeJob(row, OutcomeBuried, d)
		}
		r.Stats.buried.Add(1)
		return
	}
	r.Stats.completed.Add(int64(len(res.Completed) + len(res.Already)))
	r.notifyCompleted(batch, res)
	if len(res.Refused) > 0 {
		r.Stats.refused.Add(int64(len(res.Refused)))
		r.Log.Warn("completions refused: those attempts no longer hold their rows (rescued or deleted)", "jobs", res.Refused)
	}
}

// notifyCompleted sends job.completed for the completions a batch wrote:
// plain jobs only, not workflow steps nor state machine actions.
func (r *recorder) notifyCompleted(batch []store.Completion, res store.CompleteResult) {
	// The common case, no job.completed hook: nothing to build per job.
	if !r.Hooks.Wants(WebhookJobCompleted) {
		return
	}
	byID := make(map[int64]*store.Completion, len(batch))
	for i := range batch {
		byID[batch[i].ID] = &batch[i]
	}
	for _, ids := range [][]int64{res.Completed, res.Already} {
		for _, id := range ids {
			c, ok := byID[id]
			if !ok || c.Log.Handler == machineActionHandler || c.Log.WorkflowID.Valid {
				continue
			}
			r.Hooks.JobCompleted(id, c.Log.Handler, c.Log.Queue, c.Log.DurationMS.Int64)
		}
	}
}

// notifyFailure sends job.failed or job.buried for a written failure of a
// plain job, as the written failure decided (a job class's $tries
// included).
func (r *recorder) notifyFailure(rj *running, o *outcome, buried bool) {
	if r.Hooks == nil {
		return
	}
	r.Hooks.JobFailure(&rj.row, o.err.Error(), buried)
}

// settleStep records the outcome of a step attempt; false when the
// attempt was abandoned (Stop handed it back) and nothing may follow it.
func (r *recorder) settleStep(ctx context.Context, rj *running, row *store.JobRow, stepErr, err error) bool {
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return false // abandoned by Stop, which already handed it back
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrShutdown):
		// Stopped mid-step: nothing was settled, the attempt goes back.
		r.Writes.handBack(ctx, []store.Attempt{rj.job.attempt})
	case err != nil && errors.Is(context.Cause(ctx), ErrJobLost):
		r.Stats.refused.Add(1)
		r.Log.Warn("workflow step lost while running (rescued or deleted); its result is dropped", "job", row.ID, "err", loggedError{stepErr})
	case err != nil && ctx.Err() == nil && errors.Is(err, workflow.ErrNotStarted) &&
		(retryableRead(err) || errors.Is(err, workflow.ErrClassSettings)):
		// Nothing ran (the state read failed on the connection or timed
		// out): the attempt goes back for another try. Any other error is
		// left to the stale sweep below, which spends the attempt, so a
		// read that always fails cannot loop.
		r.Log.Warn("workflow step not started; handing it back", "job", row.ID, "err", err)
		r.Writes.handBack(ctx, []store.Attempt{rj.job.attempt})
	case err != nil && errors.Is(err, workflow.ErrNeedsPHP):
		r.leaveToPHP(ctx, rj, err)
	case err != nil:
		r.Log.Error("workflow step: recording its outcome failed; the stale sweep will deal with the job",
			"job", row.ID, "workflow", row.WorkflowID.Int64, "err", err)
	case stepErr == nil:
		r.Stats.completed.Add(1)
		r.Observe.observeJob(row, OutcomeCompleted, time.Since(rj.start))
	default:
		f := r.Decide(row, stepErr)
		if f.Terminal || workflow.IsConstraintViolation(stepErr) {
			r.Stats.buried.Add(1)
			r.Observe.observeJob(row, OutcomeBuried, time.Since(rj.start))
			r.Log.Warn("workflow step buried", "job", row.ID, "workflow", row.WorkflowID.Int64, "handler", row.Handler, "err", loggedError{stepErr})
		} else {
			r.Stats.retried.Add(1)
			r.Observe.observeJob(row, OutcomeRetried, time.Since(rj.start))
			r.Log.Info("workflow step failed; retrying", "job", row.ID, "workflow", row.WorkflowID.Int64,
				"handler", row.Handler, "in", f.RetryDelay, "err", loggedError{stepErr})
		}
	}
	return true
}

// leftToPHPDelay is how long a step given back for PHP workers stays out
// of this worker's claims: PHP workers poll every second or so and take it
// meanwhile; if none does, this worker claims it again then and gives it
// back again, writing nothing each time.
const leftToPHPDelay = 30 * time.Second

// leaveToPHP gives back a claimed step the engine refused to run because
// only PHP can (workflow.ErrNeedsPHP: a repeat with a PHP condition class
// and no PHP pool): the attempt restored, the row as PHP workers expect it.
func (r *recorder) leaveToPHP(ctx context.Context, rj *running, why error) {
	err := r.Writes.persist(ctx, "leave to PHP", func(ctx context.Context) error {
		_, err := r.Store.ReleaseJobLater(ctx, rj.job.attempt, time.Now().Add(leftToPHPDelay))
		return err
	})
	if err != nil {
		r.Log.Error("giving a step back to PHP workers failed; the stale sweep will recover it", "job", rj.row.ID, "err", err)
		return
	}
	r.Stats.handedBack.Add(1)
	r.Log.Info("workflow step left to PHP workers", "job", rj.row.ID, "workflow", rj.row.WorkflowID.Int64, "handler", rj.row.Handler, "reason", why)
}

// afterBury is what the plugin's worker does once a job is buried, beyond
// the burial itself (its `failed()` hook runs with the job, in the pool):
// the chain's catch, a state machine action's fail_action, then the
// batch callbacks the burial finished.
func (r *recorder) afterBury(ctx context.Context, rj *running, cause error, cb store.BatchCallbacks) {
	if !cb.Any() && rj.row.Handler != machineActionHandler && chainCatchClass(rj.row.Payload) == "" {
		return
	}
	r.rowWritten(rj)
	r.callChainCatch(ctx, rj, cause)
	if rj.row.Handler == machineActionHandler {
		r.failMachineAction(ctx, rj, cause.Error(), true)
	}
	r.fireBatchCallbacks(ctx, rj, cb)
}
