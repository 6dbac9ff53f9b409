package queuety

import (
	"context"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
)

// runner runs the rows of a committed claim (it is the claimer's
// jobStarter): each attempt in its own goroutine and slot, under its own
// context, through the executor (a plain job) or the workflow engine (a
// step, and the steps its completion chains in the same slot); the
// recorder writes what became of it. Stop waits for its goroutines (wait)
// and cuts them at the end of the grace (cancel).
type runner struct {
	runnerParams
	wg sync.WaitGroup
	// jobsCtx is the parent of every attempt's context. It is stored, not
	// passed, because it is the attempts' lifetime rather than any
	// caller's: it begins at Start (with Start's values), outlives the claim
	// rounds that start the attempts, and ends only when Stop's grace is
	// over (cancel, ErrShutdown). The engine's local attempts run under it
	// too (engineHost.JobContext).
	jobsCtx    context.Context
	cancelJobs context.CancelCauseFunc
}

// runnerParams are the parts the runner hands attempts between.
type runnerParams struct {
	Exec *executor
	// Engine runs workflow steps; nil: the worker claims none.
	Engine *engine.Engine
	Record *recorder
	Jobs   *runningSet
	Writes *stateWriter
	// Claim owns the slots: a finished attempt frees its slot and counts
	// for Drained; a settled step asks it for the next claim at once.
	Claim *claimer
	// Beat is what a Job's Heartbeat writes through.
	Beat     *jobBeat
	WorkerID string
	Stats    *workerCounters
}

func newRunner(p runnerParams) *runner { return &runner{runnerParams: p} }

// start begins the attempts' lifetime: ctx's values, not its end.
func (r *runner) start(ctx context.Context) {
	r.jobsCtx, r.cancelJobs = context.WithCancelCause(context.WithoutCancel(ctx))
}

// cancel ends every attempt still running with cause (Stop's grace is
// over); a no-op before start.
func (r *runner) cancel(cause error) {
	if r.cancelJobs != nil {
		r.cancelJobs(cause)
	}
}

// wait waits for the attempts' goroutines until ctx ends; false when ctx
// ended first.
func (r *runner) wait(ctx context.Context) bool { return waitGroup(ctx, &r.wg) }

// startJobs runs the jobs of a committed claim, each in its own goroutine.
func (r *runner) startJobs(l *lane, rows []store.JobRow) {
	now := time.Now()
	l.take(len(rows))
	for i := range rows {
		rj, ctx := r.newRunning(rows[i], l, now, claimedAttempt(&rows[i]))
		rj.sessionLease = sessionLease(&rows[i])
		r.Jobs.add(rj)
		r.wg.Add(1)
		go r.execute(ctx, rj)
	}
}

// newRunning is the in-flight entry of attempt of row, in a slot of l,
// with its own context under the jobs context.
func (r *runner) newRunning(row store.JobRow, l *lane, now time.Time, attempt int) (*running, context.Context) {
	row.Attempts = attempt
	rj := &running{row: row, start: now, lane: l}
	rj.touched(now)
	ctx, cancel := context.WithCancelCause(r.jobsCtx)
	rj.cancel = cancel
	rj.job = &Job{
		ID: row.ID, Queue: row.Queue, Handler: row.Handler, Priority: Priority(row.Priority),
		Attempt: attempt, MaxAttempts: row.MaxAttempts, RawPayload: []byte(row.Payload),
		attempt: store.Attempt{ID: row.ID, Attempt: attempt, WorkerID: r.WorkerID},
		beat:    r.Beat, run: rj,
	}
	return rj, ctx
}

// release frees the job's slot.
func (r *runner) release(rj *running) {
	r.Claim.noteFinished() // before it leaves running: see Drained
	r.Jobs.remove(rj.row.ID)
	rj.cancel(nil)
	rj.lane.free()
}

// execute runs one attempt of a claimed job and records its outcome.
func (r *runner) execute(ctx context.Context, rj *running) {
	defer r.wg.Done()
	if r.isWorkflowStep(&rj.row) {
		r.executeWorkflowStep(ctx, rj)
		return
	}
	settings, err := r.Exec.run(ctx, rj)
	o := &outcome{err: err, settings: settings, duration: time.Since(rj.start)}
	defer r.release(rj)
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return // abandoned by Stop, which already handed it back
	}
	r.Record.record(ctx, rj, o)
}

// executeWorkflowStep runs a claimed workflow step job through the engine.
// The claim committed the row as processing before this runs. A step whose completion
// chained the next one (internal/engine/chain.go) is followed by it in the same
// slot.
func (r *runner) executeWorkflowStep(ctx context.Context, rj *running) {
	if rj.state.Load() != stateRunning {
		r.release(rj)
		return
	}
	row := rj.row
	stepErr, next, err := r.Engine.RunStep(withStepJob(ctx, rj.job), &row, r.Exec.decideStep)
	for {
		if next == nil {
			// A settled step usually enqueued the next one (or woke a
			// waiting parent): claim it now rather than after the poll
			// interval.
			r.Claim.kick()
		}
		if !r.Record.settleStep(ctx, rj, &row, stepErr, err) || next == nil {
			if next != nil {
				r.Writes.handBack(ctx, []store.Attempt{{ID: next.Job.ID, Attempt: next.Job.Attempts, WorkerID: r.WorkerID}})
			}
			r.release(rj)
			return
		}
		if rj, ctx = r.chainTo(ctx, rj, next); rj == nil {
			return
		}
		row = rj.row
		stepErr, next, err = r.Engine.RunChained(withStepJob(ctx, rj.job), next, r.Exec.decideStep)
	}
}

// chainTo moves rj's slot to the chained step job next, which the worker
// holds from the commit that enqueued it: registered as running (so the
// heartbeat renews it and Stop waits for it or hands it back), with its
// own context. It returns nil, with next handed back, when the worker
// began stopping since that commit. ctx is rj's attempt's.
func (r *runner) chainTo(ctx context.Context, rj *running, next *engine.Chained) (*running, context.Context) {
	nrj, nctx := r.newRunning(next.Job, rj.lane, time.Now(), next.Job.Attempts)
	stopping := r.Claim.stopped()
	r.Jobs.chain(rj.row.ID, nrj, !stopping)
	rj.cancel(nil)
	if stopping {
		nrj.cancel(nil)
		r.Writes.handBack(ctx, []store.Attempt{nrj.job.attempt})
		rj.lane.free()
		return nil, nil
	}
	r.Stats.chained.Add(1)
	r.Claim.refreshPausedSoon()
	return nrj, nctx
}

// isWorkflowStep reports whether a claimed row is a workflow step the
// engine runs.
func (r *runner) isWorkflowStep(row *store.JobRow) bool {
	return r.Engine != nil && row.WorkflowID.Valid
}
