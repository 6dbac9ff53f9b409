package workflow

import (
	"errors"
	"fmt"
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
