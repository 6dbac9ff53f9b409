package phpjson

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// PHP 8's (int) cast of decoded JSON values, which the runtime applies to
// ids, counters and step indexes. Expectations checked with php -r on PHP
// 8.2.36.
func TestToInt(t *testing.T) {
	t.Parallel()
	cases := map[string]int64{
		`null`: 0, `true`: 1, `false`: 0, `7`: 7, `-3`: -3, `2.9`: 2, `-2.9`: -2, `1e3`: 1000,
		`"12"`: 12, `" 12abc"`: 12, `"abc"`: 0, `"1e3"`: 1000, `"1.9"`: 1, `"-0"`: 0, `"+5"`: 5,
		`".5"`: 0, `"0x1A"`: 0, `""`: 0, `[]`: 0, `{"a":1}`: 0,
		`"99999999999999999999"`: math.MaxInt64, `"-99999999999999999999"`: math.MinInt64, `"1e400x"`: 0,
		`" \n7"`: 7, `"7 "`: 7, `"1e30"`: math.MaxInt64, `"-1e30"`: math.MinInt64, `"9.3e18"`: math.MaxInt64, `1e30`: 5076964154930102272, `-1e30`: -5076964154930102272, `1e19`: -8446744073709551616,
	}
	for in, want := range cases {
		v, err := DecodeString(in)
		require.NoError(t, err)
		require.Equal(t, want, ToInt(v), in)
	}
}

func TestToString(t *testing.T) {
	t.Parallel()
	cases := map[string]string{`null`: "", `true`: "1", `false`: "", `12`: "12", `1.5`: "1.5", `"x"`: "x", `[1]`: ""}
	for in, want := range cases {
		v, err := DecodeString(in)
		require.NoError(t, err)
		require.Equal(t, want, ToString(v), in)
	}
}

func TestTruthy(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{`null`: false, `false`: false, `0`: false, `0.0`: false, `""`: false, `"0"`: false,
		`[]`: false, `{}`: false, `true`: true, `1`: true, `"a"`: true, `"0.0"`: true, `[0]`: true}
	for in, want := range cases {
		v, err := DecodeString(in)
		require.NoError(t, err)
		require.Equal(t, want, Truthy(v), in)
	}
}

func TestIsIntKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{"0": true, "7": true, "-3": true, "07": false, "-0": false,
		"+1": false, "": false, "1.0": false, "a": false, "9223372036854775808": false} {
		require.Equal(t, want, IsIntKey(key), key)
	}
}
