package queuety

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorClass lets an error name the class written to logs.error_class
// (PHP writes get_class($e)). Errors without it are named by Go type.
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

// PanicError is a handler panic, caught and treated as a failed attempt.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrorClass names panics as such.
func (e *PanicError) ErrorClass() string { return "panic" }

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

// errorClass picks logs.error_class for err.
func errorClass(err error) string {
	var ec ErrorClass
	if errors.As(err, &ec) {
		return ec.ErrorClass()
	}
	return fmt.Sprintf("%T", err)
}

// errorTrace is logs.error_trace: the panic stack, the error's own trace
// (ErrorTrace), or the chain of wrapped errors in PHP's "#0 ..." style.
func errorTrace(err error) string {
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Stack
	}
	var et ErrorTrace
	if errors.As(err, &et) {
		return et.ErrorTrace()
	}
	var b strings.Builder
	for i := 0; err != nil && i < 32; i++ {
		fmt.Fprintf(&b, "#%d %T: %s\n", i, err, err.Error())
		err = errors.Unwrap(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
