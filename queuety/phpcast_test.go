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

// StateMachine reads priority and max_attempts with (int) too.
func TestMachineIntCastsLikePHP(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{`"1e1"`: 10, `" 3"`: 3, `"2abc"`: 2, `1e19`: -8446744073709551616, `[]`: 7, `null`: 7} {
		v, err := phpjson.DecodeString(in)
		require.NoError(t, err)
		require.Equal(t, want, phpInt(v, 7), in)
	}
}

// StateMachineBuilder trims names with PHP's trim(): NUL goes, \f stays.
// Earlier builds used Go's TrimSpace (the other way round for both).
func TestMachineBuilderTrimsLikePHP(t *testing.T) {
	t.Parallel()
	def, _, err := NewMachine("m").OnQueue("\x00jobs").State("\x00wait", "").On(" go\x00", "end\f", "", "").State("end\f", "completed").Definition()
	require.NoError(t, err)
	d, err := phpjson.Decode(def)
	require.NoError(t, err)
	o, _ := d.AsObject()
	require.Equal(t, "jobs", phpjson.ToString(phpjson.Get(o, "queue")))
	states := phpjson.AsArray(phpjson.Get(o, "states"))
	require.Equal(t, []string{"wait", "end\f"}, states.Keys())
	tr := phpjson.Values(phpjson.Get(phpjson.AsArray(phpjson.Get(states, "wait")), "transitions"))
	require.Len(t, tr, 1)
	require.Equal(t, "go", phpjson.ToString(phpjson.Get(phpjson.AsArray(tr[0]), "event")))
}

// QUEUETY_QUEUE_COST_BUDGETS and QUEUETY_GROUP_COST_BUDGETS keys are trimmed
// with PHP's trim() (Config::normalize_int_map_constant): NUL and \v go,
// \f stays, as PHP 8.2 does; earlier builds used strings.TrimSpace.
func TestCostBudgetKeysTrimLikePHP(t *testing.T) {
	t.Parallel()
	got := normalizeBudgets(map[string]int64{"\x00emails\x0b": 3, " \fbulk ": 2, " ": 5, "zero": 0})
	require.Equal(t, map[string]int64{"emails": 3, "\fbulk": 2}, got)
}
