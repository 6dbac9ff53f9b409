// Package throwable is how a Go error or panic reads in the plugin's
// failure columns: logs.error_class and error_trace, the local-activity
// attempt's error_class, and the class non_retryable_error_types match.
// Queuety writes get_class($e) and $e->getTraceAsString() of the Throwable
// it caught; every Go path (plain jobs, workflow steps, local activities,
// callbacks) names its errors and panics here, so the same failure gives
// the same row whichever path ran it.
package throwable

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// Class is the error_class of err: the ErrorClass() of the first error in
// its chain that has one (a PHP exception from the pool, Queuety's own
// exception classes), else the Go type name of err without a pointer's "*"
// ("errors.errorString"), as get_class names a class: never with a sigil.
// A wrapper that only marks an error (NonRetryable) names the error it
// wraps by implementing ErrorClass itself.
func Class(err error) string {
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	if err == nil {
		return "error"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
}

// Trace is the error_trace of err: the stack of a panic, the error's own
// ErrorTrace() (a PHP trace from the pool), or else the chain of wrapped
// errors in getTraceAsString's "#0 ..." style.
func Trace(err error) string {
	var p *Panic
	if errors.As(err, &p) {
		return p.Stack
	}
	var t interface{ ErrorTrace() string }
	if errors.As(err, &t) {
		return t.ErrorTrace()
	}
	var b strings.Builder
	for i := 0; err != nil && i < 32; i++ {
		fmt.Fprintf(&b, "#%d %T: %s\n", i, err, err.Error())
		err = errors.Unwrap(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Panic is a panic in Go code the daemon called (a handler, a step, a
// callback), caught and treated as a failed attempt: PHP's catch
// (\Throwable) around the same call.
type Panic struct {
	Value any
	Stack string
}

func (e *Panic) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrorClass names panics as such.
func (e *Panic) ErrorClass() string { return "panic" }

// Catch turns a panic in the function that defers it into a *Panic stored
// in *err: defer throwable.Catch(&err), with err the named result.
func Catch(err *error) {
	if r := recover(); r != nil {
		*err = &Panic{Value: r, Stack: string(debug.Stack())}
	}
}
