package queuety

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// Queuety picks a backoff delay as `is_scalar($pick) ? (int) $pick : 0`
// (Worker::process_job). PHP 8.2's (int) reads "1e3" as 1000, skips
// leading whitespace (newlines too) and keeps a numeric prefix; checked
// with php -r on PHP 8.2.36. Earlier builds read "1e3" as 1 and "\n7" as 0.
func TestRuntimeBackoffListCastsLikePHP(t *testing.T) {
	t.Parallel()
	v, err := phpjson.DecodeString(`["1e3", " 12", "12abc", "\n7", "1.9e2", 2.5, true, null, [1], "99999999999999999999"]`)
	require.NoError(t, err)
	b := backoffOf(v)
	require.NotNil(t, b)
	require.Equal(t, []int{1000, 12, 12, 7, 190, 2, 1, 0, 0, math.MaxInt64}, b.List)
}

// The runtime rate limit [max, window] is cast the same way
// (`is_scalar($rl_max) ? (int) $rl_max : 0`).
func TestRuntimeRateLimitCastsLikePHP(t *testing.T) {
	t.Parallel()
	rl := runtimeRateLimit(`{"__queuety_runtime":{"rate_limit":["1e1"," 6e1"]}}`)
	require.Equal(t, &workflow.RateLimit{Max: 10, Window: 60}, rl)
}

// QUEUETY_QUEUE_COST_BUDGETS and QUEUETY_GROUP_COST_BUDGETS keys are trimmed
// with PHP's trim() (Config::normalize_int_map_constant): NUL and \v go,
// \f stays, as PHP 8.2 does; earlier builds used strings.TrimSpace.
func TestCostBudgetKeysTrimLikePHP(t *testing.T) {
	t.Parallel()
	got := normalizeBudgets(map[string]int64{"\x00emails\x0b": 3, " \fbulk ": 2, " ": 5, "zero": 0})
	require.Equal(t, map[string]int64{"emails": 3, "\fbulk": 2}, got)
}
