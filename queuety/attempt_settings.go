package queuety

import (
	"time"
)

// AttemptSettings lets a handler's error carry the retry settings the job's
// own code declared while it ran, which the worker then uses for this
// failure instead of the row's and the handler's: the PHP pool reports a
// Contracts\Job's $tries and $backoff this way, as the plugin's worker
// reads them from the class at run time.
type AttemptSettings interface {
	// MaxAttempts is the job's attempt limit, 0 when not declared.
	MaxAttempts() int
	// RetryDelay is the wait before the next attempt; ok is false when not
	// declared.
	RetryDelay() (d time.Duration, ok bool)
}
