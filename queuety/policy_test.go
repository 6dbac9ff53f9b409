package queuety

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// retryOrBury is the one decision for failed and stale attempts of jobs,
// steps and external tasks: bury once the attempts reach the limit (or at
// once for an invalid row or a non-retryable task failure), else retry
// after the backoff for this attempt, or the delay the job declared.
func TestRetryOrBury(t *testing.T) {
	s := attemptSettings{maxAttempts: 3, backoff: Backoff{Strategy: BackoffFixed}}
	seven := 7 * time.Second
	for _, tc := range []struct {
		name    string
		attempt int
		err     error
		bury    bool
		delay   time.Duration
	}{
		{"stale, attempts left", 2, nil, false, 60 * time.Second},
		{"stale, last attempt", 3, nil, true, 60 * time.Second},
		{"failed, attempts left", 1, errors.New("boom"), false, 60 * time.Second},
		{"failed past the limit", 4, errors.New("boom"), true, 60 * time.Second},
		{"invalid row", 1, &InvalidJobError{Reason: "Handler not found: x"}, true, 60 * time.Second},
		{"non-retryable task", 1, errNonRetryable, true, 60 * time.Second},
		{"declared $tries", 1, fmt.Errorf("w: %w", declared{max: 1}), true, 60 * time.Second},
		{"declared $backoff", 1, declared{delay: &seven}, false, seven},
	} {
		bury, delay := s.retryOrBury(tc.attempt, tc.err)
		require.Equal(t, tc.bury, bury, tc.name)
		require.Equal(t, tc.delay, delay, tc.name)
	}
}
