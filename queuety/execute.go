package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

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

// startJobs runs the jobs of a committed claim, each in its own goroutine.
func (w *Worker) startJobs(l *lane, rows []store.JobRow) {
	now := time.Now()
	l.take(len(rows))
	for i := range rows {
		rj, ctx := w.newRunning(rows[i], l, now, claimedAttempt(&rows[i]))
		rj.sessionLease = sessionLease(&rows[i])
		w.jobs.add(rj)
		w.execWG.Add(1)
		go w.execute(ctx, rj)
	}
}

// newRunning is the in-flight entry of attempt of row, in a slot of l,
// with its own context under the worker's jobs context.
func (w *Worker) newRunning(row store.JobRow, l *lane, now time.Time, attempt int) (*running, context.Context) {
	row.Attempts = attempt
	rj := &running{row: row, start: now, lane: l}
	rj.touched(now)
	ctx, cancel := context.WithCancelCause(w.jobsCtx)
	rj.cancel = cancel
	rj.job = &Job{
		ID: row.ID, Queue: row.Queue, Handler: row.Handler, Priority: Priority(row.Priority),
		Attempt: attempt, MaxAttempts: row.MaxAttempts, RawPayload: []byte(row.Payload),
		attempt: store.Attempt{ID: row.ID, Attempt: attempt, WorkerID: w.id},
		beat:    w.beat, run: rj,
	}
	return rj, ctx
}

// release frees the job's slot.
func (w *Worker) release(rj *running) {
	w.claim.noteFinished() // before it leaves running: see Drained
	w.jobs.remove(rj.row.ID)
	rj.cancel(nil)
	rj.lane.free()
}

// execute runs one attempt of a claimed job and records its outcome.
func (w *Worker) execute(ctx context.Context, rj *running) {
	defer w.execWG.Done()
	if w.isWorkflowStep(&rj.row) {
		w.executeWorkflowStep(ctx, rj)
		return
	}
	settings, err := w.exec.run(ctx, rj)
	o := &outcome{err: err, settings: settings, duration: time.Since(rj.start)}
	defer w.release(rj)
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return // abandoned by Stop, which already handed it back
	}
	cause := context.Cause(ctx)
	switch {
	case err == nil && rj.row.BatchID.Valid:
		w.observeJob(&rj.row, OutcomeCompleted, o.duration)
		w.completeBatchJob(rj, o.duration) // with its batch's counters (batch.go)
	case err == nil:
		w.observeJob(&rj.row, OutcomeCompleted, o.duration)
		w.jobs.settle(rj)
		if !w.completer.complete(store.Completion{Attempt: rj.job.attempt, Log: w.completedLog(rj, o.duration)}) {
			w.log.Error("completion after the completer stopped; the stale sweep will retry the job", "job", rj.row.ID)
		}
	case errors.Is(cause, ErrJobLost):
		w.stats.refused.Add(1)
		w.log.Warn("job lost while running (rescued or deleted); its result is dropped", "job", rj.row.ID, "err", err)
	case errors.Is(cause, ErrShutdown), errors.Is(err, errLeaveToPHP):
		w.writes.handBack([]store.Attempt{rj.job.attempt})
	default:
		w.fail(rj, o)
	}
}

func (w *Worker) completedLog(rj *running, d time.Duration) store.LogRow {
	l := store.LogFor(&rj.row, store.EventCompleted)
	l.Attempt = store.Int(int64(rj.row.Attempts))
	l.DurationMS = store.Int(d.Milliseconds())
	mem := rj.memPeakKB.Load()
	if mem <= 0 {
		mem = w.mem.perSlotKB()
	}
	l.MemoryPeakKB = store.Int(mem)
	return l
}

// executor runs one attempt of a plain job: it checks the row, looks its
// handler up (once: the settings come from the same lookup), and runs it
// under the attempt's time limit, a panic caught as a PanicError. The
// settings it returns are what retryOrBury decides a failure with
// (failure.go); what becomes of the outcome is the worker's (execute).
type executor struct {
	policy attemptPolicy
	// lookup is the registry's, plus the state machine actions
	// (Worker.lookupHandler).
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
