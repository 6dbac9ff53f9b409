package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
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

// stepTimeout is a step attempt's time limit: the job's runtime payload,
// handler options or the default, as for plain jobs.
func (e *executor) stepTimeout(row *store.JobRow) (time.Duration, error) {
	payload, err := phpjson.DecodeString(row.Payload)
	if err != nil {
		payload = phpjson.Null()
	}
	d := e.policy.settings(row, payload).timeout
	return d, &TimeoutError{Seconds: int(d.Seconds())}
}

// decideStep is retryOrBury (policy.go) for a failed step attempt.
func (e *executor) decideStep(row *store.JobRow, err error) engine.Failure {
	payload, perr := phpjson.DecodeString(row.Payload)
	if perr != nil {
		payload = phpjson.Null()
	}
	bury, delay := e.policy.settings(row, payload).retryOrBury(row.Attempts, err)
	return engine.Failure{
		Message:    err.Error(),
		Class:      store.FitChars(errorClass(err), 255),
		Trace:      errorTrace(err),
		Terminal:   bury,
		RetryDelay: delay,
	}
}
