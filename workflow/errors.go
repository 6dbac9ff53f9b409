package workflow

import (
	"errors"
	"fmt"
	"strings"
)

// PHP exception classes the builder's errors correspond to.
const (
	RuntimeException         = "RuntimeException"
	InvalidArgumentException = "InvalidArgumentException"
)

// BuildError is a definition Queuety's WorkflowBuilder refuses. Message is
// PHP's exception message word for word and Class its exception class, so
// errors read the same from either side; Method is the PHP builder method
// that throws.
type BuildError struct {
	Method  string
	Class   string
	Message string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("workflow: %s: %s", e.Method, e.Message)
}

// ErrNotStarted wraps an error that ended a step before its handler ran or
// anything was written: the caller may hand the job back at once instead
// of leaving it to the stale sweep.
var ErrNotStarted = errors.New("workflow step not started")

// ConstraintViolation is Queuety's WorkflowConstraintViolationException: a
// budget or guardrail was exceeded. The step's job is buried and the
// workflow fails without retrying (for a for_each branch it is recorded as
// a branch failure).
type ConstraintViolation struct{ Message string }

func (e *ConstraintViolation) Error() string { return e.Message }

// ErrorClass is the PHP class written to logs.error_class.
func (e *ConstraintViolation) ErrorClass() string {
	return `Queuety\Exceptions\WorkflowConstraintViolationException`
}

// IsConstraintViolation reports whether err is (or wraps) one.
func IsConstraintViolation(err error) bool {
	var cv *ConstraintViolation
	return errors.As(err, &cv)
}

// RuntimeError is an engine error PHP raises as a RuntimeException (an
// unknown _next_step target, a for_each items key that is not a list...):
// the step fails and is retried like a handler error.
type RuntimeError struct{ Message string }

func (e *RuntimeError) Error() string { return e.Message }

// ErrorClass is the PHP class written to logs.error_class.
func (e *RuntimeError) ErrorClass() string { return "RuntimeException" }

// LifecycleError is a lifecycle operation the workflow's status does not allow
// (PHP's RuntimeException with the same message).
type LifecycleError struct{ Message string }

func (e *LifecycleError) Error() string { return e.Message }

// ErrorClass is the PHP class of the error.
func (e *LifecycleError) ErrorClass() string { return RuntimeException }

// IsLifecycleError reports whether err is (or wraps) a LifecycleError.
func IsLifecycleError(err error) bool {
	var se *LifecycleError
	return errors.As(err, &se)
}

// ErrNeedsPHP matches a NeedsPHPError.
var ErrNeedsPHP = errors.New("workflow: PHP handlers this process cannot run")

// NeedsPHPError is an action refused because it would call PHP classes
// this process cannot run.
type NeedsPHPError struct {
	WorkflowID int64
	Action     string
	Classes    []string
}

func (e *NeedsPHPError) Error() string {
	if e.Action == "repeat" {
		return fmt.Sprintf("Workflow %d: its repeat condition is a PHP class this process cannot run (%s); the step is left to PHP workers, or a daemon with --php.",
			e.WorkflowID, strings.Join(e.Classes, ", "))
	}
	return fmt.Sprintf("Workflow %d: its %s handling calls PHP classes this process cannot run (%s); %s it from PHP (Queuety::%s_workflow) or through a daemon with --php.",
		e.WorkflowID, e.Action, strings.Join(e.Classes, ", "), e.Action, e.Action)
}

// Is makes errors.Is(err, ErrNeedsPHP) true.
func (e *NeedsPHPError) Is(target error) bool { return target == ErrNeedsPHP }

// ReplayError is export data a replay cannot use (PHP's RuntimeException).
type ReplayError struct{ Message string }

func (e *ReplayError) Error() string { return e.Message }
