package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// outcome is a finished attempt.
type outcome struct {
	err      error
	settings attemptSettings
	duration time.Duration
}

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

// executor runs one attempt of a plain job: it checks the row, looks its
// handler up (once: the settings come from the same lookup), and runs it
// under the attempt's time limit, a panic caught as a PanicError. The
// settings it returns are what retryOrBury decides a failure with
// (failure.go); what becomes of the outcome is the recorder's.
type executor struct {
	policy attemptPolicy
	// lookup is the registry's, plus the state machine actions
	// (machine_claim.go).
	lookup func(name string) (registered, bool)
	log    *slog.Logger
}

// run validates the row, resolves the handler and runs it under the
// attempt's time limit.
func (e *executor) run(ctx context.Context, rj *running) (attemptSettings, error) {
	row := &rj.row
	settings := attemptSettings{maxAttempts: row.MaxAttempts, timeout: e.policy.timeout, backoff: e.policy.backoff}
	if row.Priority < int(PriorityLow) || row.Priority > int(PriorityUrgent) {
		return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid priority %d: Queuety priorities are 0 (low) to 3 (urgent).", row.Priority)}
	}
	payload, err := phpjson.DecodeString(row.Payload)
	if err != nil {
		return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid payload: not valid JSON (%v).", err)}
	}
	if _, ok := payload.AsObject(); !ok {
		if _, ok := payload.AsList(); !ok {
			return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid payload: a JSON object is required, got %s.", payload.Kind())}
		}
	}
	h, ok := e.lookup(row.Handler)
	if !ok {
		return settings, &InvalidJobError{Reason: "Handler not found: " + row.Handler}
	}
	settings = e.policy.settingsWith(h, row, payload)
	rj.job.Payload = stripReserved(payload)

	// The PHP pool starts the limit when a PHP process takes the job, so
	// the wait for a free process does not count (workflow/time_limit.go).
	tctx, cancel := workflow.LimitFor(ctx, h.h, settings.timeout, &TimeoutError{Seconds: int(settings.timeout.Seconds())})
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- callHandler(tctx, h.h, rj.job) }()
	select {
	case err = <-done:
	case <-tctx.Done():
		// Give the handler a moment to notice; past that, stop waiting:
		// its goroutine is left to finish on its own.
		select {
		case err = <-done:
		case <-time.After(abandonAfter):
			e.log.Warn("handler ignored its cancelled context; no longer waiting for it", "job", row.ID, "handler", row.Handler)
			err = context.Cause(tctx)
		}
	}
	if err != nil {
		var te *TimeoutError
		if errors.As(context.Cause(tctx), &te) && tctx.Err() != nil && ctx.Err() == nil {
			err = te
		}
	}
	return settings, err
}

// stripReserved drops Queuety's reserved keys, which a handler never sees.
func stripReserved(v phpjson.Value) phpjson.Value {
	obj, ok := v.AsObject()
	if !ok {
		return v
	}
	_, hasRT := obj.Get(runtimeKey)
	_, hasCC := obj.Get(chainCatchKey)
	if !hasRT && !hasCC {
		return v
	}
	out := phpjson.NewObject()
	for k, e := range obj.All() {
		if k != runtimeKey && k != chainCatchKey {
			out.Set(k, e)
		}
	}
	return phpjson.ObjectValue(out)
}

func callHandler(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return h.Handle(ctx, job)
}
