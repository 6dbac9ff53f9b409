package phpjson

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestDecodeLargeListAllocatesItOnce bounds what decoding a state holding
// a list of 200,000 ints allocates: the input copy, the stack's growth
// and no second copy of the elements. Not parallel: it reads the
// process's allocation counter.
func TestDecodeLargeListAllocatesItOnce(t *testing.T) {
	const n = 200_000
	var sb strings.Builder
	sb.WriteString(`{"name":"big","items":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(itoa(i))
	}
	sb.WriteString(`],"_for_each_steps":[]}`)
	doc := sb.String()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := DecodeString(doc)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	items, ok := v.obj.Get("items")
	require.True(t, ok)
	list, ok := items.AsList()
	require.True(t, ok)
	require.Len(t, list, n)
	last, _ := list[n-1].AsInt64()
	require.Equal(t, int64(n-1), last)

	elems := uint64(n) * uint64(unsafe.Sizeof(Value{}))
	allocated := after.TotalAlloc - before.TotalAlloc
	// The stack grows by a quarter at a time past 256 elements, so its
	// growth allocates about five times the final size; a copy of the
	// finished list would be one more.
	t.Logf("allocated %d bytes, %.2f× the elements", allocated, float64(allocated)/float64(elems))
	require.Less(t, allocated, elems*59/10, "the decoded list is copied out of the stack")
	require.LessOrEqual(t, uint64(cap(list)), elems*5/4/uint64(unsafe.Sizeof(Value{}))+1, "the list keeps at most a quarter spare")
}
