package phpjson

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeLargeListGrowsItsBufferOnce (N4) bounds what encoding an
// object holding two lists of 200,000 ints allocates (a for_each state:
// the items and the runtime's copy of them): the output and one growth per
// list, not the five times the output that growing a quarter at a time
// cost. The bytes are json_encode's all the same. Not parallel: it reads
// the process's allocation counter.
func TestEncodeLargeListGrowsItsBufferOnce(t *testing.T) {
	const n = 200_000
	items := make([]Value, n)
	want := []byte{'['}
	for i := range items {
		items[i] = Int(int64(i))
		if i > 0 {
			want = append(want, ',')
		}
		want = strconv.AppendInt(want, int64(i), 10)
	}
	want = append(want, ']')
	state := NewObject().Set("items", List(items...)).Set("copy", List(items...))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := Encode(ObjectValue(state))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, `{"items":`+string(want)+`,"copy":`+string(want)+`}`, string(out))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("encoding %d bytes allocated %d", len(out), allocated)
	require.Less(t, allocated, uint64(len(out))*3, "the buffer grew a quarter at a time")
}

// TestListSizeHint: a long list of scalars is estimated from samples, a
// short one or one of arrays gets no hint.
func TestListSizeHint(t *testing.T) {
	t.Parallel()
	ints := make([]Value, 2048)
	for i := range ints {
		ints[i] = Int(int64(i))
	}
	out, err := Encode(List(ints...))
	require.NoError(t, err)
	hint := listSizeHint(ints)
	require.GreaterOrEqual(t, hint, len(out)*3/4)
	require.LessOrEqual(t, hint, len(out)*3/2)
	require.Zero(t, listSizeHint(ints[:100]), "short")
	nested := make([]Value, 2048)
	for i := range nested {
		nested[i] = List(Int(1))
	}
	require.Zero(t, listSizeHint(nested), "arrays")
	require.Equal(t, 20, scalarSize(Int(-1234567890123456789)))
	require.Equal(t, 1, scalarSize(Int(0)))
}
