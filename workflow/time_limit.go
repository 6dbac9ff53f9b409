package workflow

import (
	"context"
	"time"
)

// Deferred time limits.
//
// A handler that waits before its work starts (the PHP pool waits for a
// free PHP process) would spend part of an attempt's time limit in that
// wait, so a worker with more slots than PHP processes would shorten the
// limit of every job queued behind others. Such a handler implements
// TimeLimitStarter: the caller (the worker for a job, the engine for a
// step) then runs it without a deadline and hands the limit over in the
// context, and the handler applies it with StartTimeLimit once the work
// starts.

// TimeLimitStarter marks a handler that starts an attempt's time limit
// itself (StartTimeLimit) when its work starts.
type TimeLimitStarter interface {
	StartsTimeLimit()
}

type timeLimitKey struct{}

type timeLimit struct {
	d     time.Duration
	cause error
}

// withTimeLimit is ctx with a time limit for StartTimeLimit to start: d,
// ending with cause (the caller's TimeoutError).
func withTimeLimit(ctx context.Context, d time.Duration, cause error) context.Context {
	return context.WithValue(ctx, timeLimitKey{}, timeLimit{d: d, cause: cause})
}

// StartTimeLimit starts the time limit withTimeLimit handed over in ctx,
// from now; without one it returns ctx and a no-op cancel.
func StartTimeLimit(ctx context.Context) (context.Context, context.CancelFunc) {
	if l, ok := ctx.Value(timeLimitKey{}).(timeLimit); ok && l.d > 0 {
		return context.WithTimeoutCause(ctx, l.d, l.cause)
	}
	return ctx, func() {}
}

// LimitFor runs h under the limit d: a TimeLimitStarter gets it handed
// over, any other handler gets a deadline now.
func LimitFor(ctx context.Context, h any, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if _, ok := h.(TimeLimitStarter); ok {
		return context.WithCancel(withTimeLimit(ctx, d, cause))
	}
	return context.WithTimeoutCause(ctx, d, cause)
}
