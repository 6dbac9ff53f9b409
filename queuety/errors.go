package queuety

import (
	"fmt"
	"strings"

	"github.com/queuety-go/queuety/internal/throwable"
)

// ErrorClass lets an error name the class written to logs.error_class
// (PHP writes get_class($e)). Errors without it are named by their Go type,
// without a pointer's "*" ("errors.errorString").
type ErrorClass interface {
	ErrorClass() string
}

// ErrorTrace lets an error supply logs.error_trace itself, as the PHP
// handler pool does with PHP's getTraceAsString().
type ErrorTrace interface {
	ErrorTrace() string
}

// TimeoutError is an attempt that ran past its time limit. It reads like
// Queuety's TimeoutException, so PHP tooling sees the same message.
type TimeoutError struct{ Seconds int }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Job exceeded maximum execution time of %d seconds.", e.Seconds)
}

// ErrorClass returns Queuety's exception class.
func (e *TimeoutError) ErrorClass() string { return `Queuety\Exceptions\TimeoutException` }

// PanicError is a handler panic, caught and treated as a failed attempt:
// error_class "panic", error_trace the goroutine's stack. Every Go path
// (jobs, workflow steps, local activities, callbacks) records panics so.
type PanicError = throwable.Panic

// InvalidJobError is a row the worker cannot run at all (payload not JSON,
// priority out of range, no handler): it is buried at once, not retried.
type InvalidJobError struct{ Reason string }

func (e *InvalidJobError) Error() string { return e.Reason }

// ErrorClass uses Queuety's class for a missing handler, so the row reads as
// PHP would have written it.
func (e *InvalidJobError) ErrorClass() string {
	if strings.HasPrefix(e.Reason, "Handler not found: ") {
		return "RuntimeException"
	}
	return "InvalidJobError"
}

// errorClass is logs.error_class of err (throwable.Class).
func errorClass(err error) string { return throwable.Class(err) }

// errorTrace is logs.error_trace of err (throwable.Trace).
func errorTrace(err error) string { return throwable.Trace(err) }
