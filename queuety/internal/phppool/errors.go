package phppool

import (
	"github.com/queuety-go/queuety/queuety"

	"errors"
	"fmt"
	"time"
)

// Error classes the pool itself reports (PHP reports its own).
const (
	// ClassWorkerCrashed: the PHP process exited or was killed by a signal
	// while running the job (exit(), a segfault, a fatal error).
	ClassWorkerCrashed = `Queuety\Bridge\WorkerCrashed`
	// ClassProtocolError: the process sent something the protocol does not
	// allow; it was killed.
	ClassProtocolError = `Queuety\Bridge\ProtocolError`
	// ClassMemoryLimit: the process's resident memory passed
	// Config.MemoryLimitMB during the job; it was killed.
	ClassMemoryLimit = `Queuety\Bridge\MemoryLimitExceeded`
)

// ErrStopped is returned by Handle once Stop has begun.
var ErrStopped = errors.New("phppool: the PHP pool is stopped")

var _ queuety.AttemptSettings = (*Error)(nil)

// Error is a failed PHP job. Error() is the exception's message, so the
// job's error_message is what PHP's worker would have stored; ErrorClass
// and ErrorTrace fill logs.error_class and logs.error_trace.
type Error struct {
	Class   string
	Message string
	Trace   string
	// Retry is what a Contracts\Job class declares ($tries, $backoff),
	// reported with its failure; nil for other handlers.
	Retry *Retry
}

// Retry is a failed job's own retry settings.
type Retry struct {
	MaxAttempts int  `json:"max_attempts"`
	Backoff     *int `json:"backoff"` // seconds before the next attempt
}

func (e *Error) Error() string { return e.Message }

// MaxAttempts is the class's $tries (queuety.AttemptSettings), 0 when it
// declares none.
func (e *Error) MaxAttempts() int {
	if e.Retry == nil {
		return 0
	}
	return e.Retry.MaxAttempts
}

// RetryDelay is the class's $backoff entry for this attempt
// (queuety.AttemptSettings).
func (e *Error) RetryDelay() (time.Duration, bool) {
	if e.Retry == nil || e.Retry.Backoff == nil {
		return 0, false
	}
	return time.Duration(max(*e.Retry.Backoff, 0)) * time.Second, true
}

// ErrorClass is get_class($e) (or one of the pool's classes).
func (e *Error) ErrorClass() string { return e.Class }

// ErrorTrace is $e->getTraceAsString(), or for a crash the process's last
// lines of output.
func (e *Error) ErrorTrace() string { return e.Trace }

// GaveUpError is the pool's terminal failure: PHP processes kept crashing.
type GaveUpError struct {
	Crashes int
	Window  time.Duration
	Last    error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("phppool: gave up after %d PHP worker crashes within %s (last: %v); fix the application or its bootstrap and restart", e.Crashes, e.Window, e.Last)
}

func (e *GaveUpError) Unwrap() error { return e.Last }
