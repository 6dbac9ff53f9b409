package workflow

import (
	"errors"
)

// Timeout kinds, checked in this order.
const (
	TimeoutScheduleToClose = "schedule_to_close"
	TimeoutHeartbeat       = "heartbeat"
	TimeoutStartToClose    = "start_to_close"
)

// ActivityTimeoutClass is the exception class of a timed-out attempt.
const ActivityTimeoutClass = `Workflow\V2\Exceptions\ActivityTimeoutException`

// ErrActivityCancelled is returned by ActivityHeartbeat when the workflow
// was cancelled (or otherwise ended): the activity should stop.
var ErrActivityCancelled = errors.New("local activity cancelled: its workflow is no longer running")

// ErrActivityLost is returned by ActivityHeartbeat when the attempt no
// longer holds its workflow task (rescued after its lease lapsed): its
// result will be discarded.
var ErrActivityLost = errors.New("local activity attempt lost its workflow task lease; its result will be discarded")

// ActivityTimeoutError is a local attempt's deadline passing.
type ActivityTimeoutError struct {
	Kind    string // schedule_to_close, heartbeat, start_to_close
	Message string
}

func (e *ActivityTimeoutError) Error() string { return e.Message }

// ErrorClass is durable-workflow's ActivityTimeoutException.
func (e *ActivityTimeoutError) ErrorClass() string { return ActivityTimeoutClass }

// NonRetryableError marks an error that fails a local activity at once,
// whatever attempts remain (durable-workflow's non-retryable failures).
type NonRetryableError struct{ Err error }

func (e *NonRetryableError) Error() string { return e.Err.Error() }

func (e *NonRetryableError) Unwrap() error { return e.Err }

// NonRetryable wraps err so a local activity fails without retrying.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &NonRetryableError{Err: err}
}
