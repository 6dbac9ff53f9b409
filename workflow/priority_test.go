package workflow

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StepDispatchOptions::priority_value matches trim($value) against the
// names: PHP's trim() strips NUL and \v but not \f or Unicode spaces
// (php -r on PHP 8.2.36). Earlier builds used Go's TrimSpace, which does
// the opposite for each of these.
func TestParsePriorityTrimsLikePHP(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"high\x00": true, "\x0bnormal ": true, " urgent\n": true, "\fhigh": false, "\u00a0high": false, "High": false} {
		p, ok := priorityValue(phpjson.String(in))
		require.Equal(t, want, ok, "%q", in)
		if ok {
			require.True(t, p.Valid())
		}
	}
	p, ok := priorityValue(phpjson.Int(2))
	require.True(t, ok)
	require.Equal(t, PriorityHigh, p)
	_, ok = priorityValue(phpjson.Int(4))
	require.False(t, ok)
}
