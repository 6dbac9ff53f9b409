package wpconfig

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The plugin's settings are integers, booleans and arrays; each literal
// is read with its PHP type, computed values are left out, and the casts
// are PHP's.
func TestParseConstants(t *testing.T) {
	t.Parallel()
	src := "<?php\n" + `
define('QUEUETY_STALE_TIMEOUT', 3600);
define( 'QUEUETY_MAX_EXECUTION_TIME', '120' );
define('QUEUETY_DEBUG', true);
define('QUEUETY_RESOURCE_ADMISSION', FALSE);
define('QUEUETY_RETRY_BACKOFF', 'linear');
define('NEG', -5);
define('HEX', 0x1F);
define('BIG', 1_000);
define('FLT', 2.5);
define('NUL', null);
define('QUEUETY_RESOURCE_QUEUE_COST_BUDGETS', array( 'default' => 20, 'reports' => '5', ));
define('QUEUETY_RESOURCE_GROUP_COST_BUDGETS', ['a' => 1, 7, 'b' => 0]);
define('COMPUTED', 60 * 60);
define('ENVY', getenv('X'));
define('NESTED', ['a' => ['b' => 1]]);
define('QUEUETY_STALE_TIMEOUT', 1);
` + base
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	c := s.Constants
	n, ok := c["QUEUETY_STALE_TIMEOUT"].Int()
	require.True(t, ok)
	require.EqualValues(t, 3600, n, "first define wins")
	require.Equal(t, ConstInt, c["QUEUETY_STALE_TIMEOUT"].Kind)
	require.Equal(t, 3, c["QUEUETY_STALE_TIMEOUT"].Line)
	n, _ = c["QUEUETY_MAX_EXECUTION_TIME"].Int()
	require.EqualValues(t, 120, n)
	require.True(t, c["QUEUETY_DEBUG"].Bool())
	require.Equal(t, ConstBool, c["QUEUETY_RESOURCE_ADMISSION"].Kind)
	require.False(t, c["QUEUETY_RESOURCE_ADMISSION"].Bool())
	require.Equal(t, "linear", c["QUEUETY_RETRY_BACKOFF"].Text)
	for name, want := range map[string]int64{"NEG": -5, "HEX": 31, "BIG": 1000, "FLT": 2, "NUL": 0} {
		n, ok := c[name].Int()
		require.True(t, ok, name)
		require.Equal(t, want, n, name)
	}
	require.Equal(t, []ArrayEntry{
		{"default", Constant{Kind: ConstInt, Text: "20"}},
		{"reports", Constant{Kind: ConstString, Text: "5"}},
	}, c["QUEUETY_RESOURCE_QUEUE_COST_BUDGETS"].Array)
	require.Equal(t, []ArrayEntry{
		{"a", Constant{Kind: ConstInt, Text: "1"}},
		{"0", Constant{Kind: ConstInt, Text: "7"}},
		{"b", Constant{Kind: ConstInt, Text: "0"}},
	}, c["QUEUETY_RESOURCE_GROUP_COST_BUDGETS"].Array)
	_, ok = c["QUEUETY_RESOURCE_GROUP_COST_BUDGETS"].Int()
	require.False(t, ok, "an array has no int value")
	for _, k := range []string{"COMPUTED", "ENVY", "NESTED"} {
		require.NotContains(t, c, k)
	}
	// Defines still holds strings only.
	require.NotContains(t, s.Defines, "QUEUETY_STALE_TIMEOUT")
	require.Equal(t, "120", s.Defines["QUEUETY_MAX_EXECUTION_TIME"])
}

func TestConstantCasts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c Constant
		n int64
		b bool
	}{
		{Constant{Kind: ConstString, Text: "12abc"}, 12, true},
		{Constant{Kind: ConstString, Text: "abc"}, 0, true},
		{Constant{Kind: ConstString, Text: "0"}, 0, false},
		{Constant{Kind: ConstString, Text: " 1.9e1"}, 19, true},
		{Constant{Kind: ConstString, Text: ""}, 0, false},
		{Constant{Kind: ConstFloat, Text: "0"}, 0, false},
		{Constant{Kind: ConstBool, Text: "1"}, 1, true},
	} {
		n, _ := tc.c.Int()
		require.Equal(t, tc.n, n, tc.c.Text)
		require.Equal(t, tc.b, tc.c.Bool(), tc.c.Text)
	}
}

// Out-of-range values follow PHP 8.2 (php -r): a float string saturates, a
// float wraps modulo 2^64, a float string past the double range is 0.
// Earlier builds gave Go's conversion (MinInt64) and 1 for "1e999".
func TestConstantIntOutOfRangeCastsLikePHP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c Constant
		n int64
	}{
		{Constant{Kind: ConstString, Text: "1e30"}, math.MaxInt64},
		{Constant{Kind: ConstString, Text: "1e999"}, 0},
		{Constant{Kind: ConstFloat, Text: "1e+19"}, -8446744073709551616},
	} {
		n, ok := tc.c.Int()
		require.True(t, ok)
		require.Equal(t, tc.n, n, tc.c.Text)
	}
}
