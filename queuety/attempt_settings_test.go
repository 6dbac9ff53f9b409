package queuety

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type declared struct {
	max   int
	delay *time.Duration
}

func (d declared) Error() string    { return "failed" }
func (d declared) MaxAttempts() int { return d.max }
func (d declared) RetryDelay() (time.Duration, bool) {
	if d.delay == nil {
		return 0, false
	}
	return *d.delay, true
}

// An error carrying the job's own settings ($tries, $backoff) decides the
// bury and the delay; without them the row's and the backoff's apply.
func TestDeclaredSettingsOverrideTheRow(t *testing.T) {
	base := attemptSettings{maxAttempts: 3, backoff: Backoff{Strategy: BackoffFixed}}

	s, d := declaredSettings(errors.New("plain"), base, 1)
	require.Equal(t, 3, s.maxAttempts)
	require.Equal(t, 60*time.Second, d)

	seven := 7 * time.Second
	s, d = declaredSettings(fmt.Errorf("wrapped: %w", declared{max: 1, delay: &seven}), base, 1)
	require.Equal(t, 1, s.maxAttempts)
	require.Equal(t, seven, d)

	s, d = declaredSettings(declared{}, base, 2)
	require.Equal(t, 3, s.maxAttempts, "0 means not declared")
	require.Equal(t, 60*time.Second, d)
}
