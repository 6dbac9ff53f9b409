package phpjson

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireStable checks that encoded, the encoding of v, reads back and
// re-encodes to the same bytes. The one exception is PHP's own:
// json_encode(-0.0) writes -0, which json_decode reads as the int 0, so the
// expectation is the encoding of v with every float -0 made an int 0.
func requireStable(tb testing.TB, v Value, encoded []byte) {
	tb.Helper()
	want, err := Encode(negZeroToInt(v))
	require.NoError(tb, err)
	back, err := Decode(encoded)
	require.NoError(tb, err, "re-decoding %q", encoded)
	again, err := Encode(back)
	require.NoError(tb, err, "re-encoding %q", encoded)
	require.Equal(tb, string(want), string(again), "re-encoding %q", encoded)
}

// negZeroToInt returns v with every float -0 replaced by the int 0, which
// is what PHP reads back from the "-0" it writes for -0.0.
func negZeroToInt(v Value) Value {
	switch v.Kind() {
	case KindNumber:
		if f, _ := v.AsFloat64(); !v.IsInt() && f == 0 && math.Signbit(f) {
			return Int(0)
		}
	case KindList:
		list, _ := v.AsList()
		out := make([]Value, len(list))
		for i, e := range list {
			out[i] = negZeroToInt(e)
		}
		return List(out...)
	case KindObject:
		o, _ := v.AsObject()
		out := NewObject()
		for k, e := range o.All() {
			out.Set(k, negZeroToInt(e))
		}
		return ObjectValue(out)
	}
	return v
}
