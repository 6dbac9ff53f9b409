package workflow

import "github.com/queuety-go/queuety/internal/throwable"

// ErrorClass names a non-retryable failure by the error it marks, so
// NonRetryable(err) records the same error_class as err and still matches
// non_retryable_error_types by that class.
func (e *NonRetryableError) ErrorClass() string { return throwable.Class(e.Err) }
