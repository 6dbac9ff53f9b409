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
	// The stack is sized once for the rest of the list after its first
	// 1,024 elements: the elements are allocated about once (growing a
	// quarter at a time allocated 5.4 times, and a copy of the finished
	// list one time more).
	t.Logf("allocated %d bytes, %.2f× the elements", allocated, float64(allocated)/float64(elems))
	require.Less(t, allocated, elems*3/2, "the list's elements are allocated more than once")
	require.LessOrEqual(t, uint64(cap(list)), uint64(n)*5/4, "the list keeps at most a quarter spare")
}

// TestDecodeLargeListOfEverything: a list long enough to be sized ahead
// whose elements hold commas and brackets in strings, escaped quotes and
// nested containers reads back exactly.
func TestDecodeLargeListOfEverything(t *testing.T) {
	t.Parallel()
	elems := []string{`"a,]\"[,"`, `[1,[2,3],{"k":"]"}]`, `{"a":[",",[]],"b":"\\"}`, `null`, `-1.5`, `"\u00e9,"`, `[]`, `true`}
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	const n = 3000
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(elems[i%len(elems)])
	}
	sb.WriteString(`],"after":[1,2]}`)
	v, err := DecodeString(sb.String())
	require.NoError(t, err)
	items, _ := v.obj.Get("items")
	list, _ := items.AsList()
	require.Len(t, list, n)
	got, err := Encode(v)
	require.NoError(t, err)
	require.True(t, sb.String() == string(got), "the list reads back as it was written")

	_, err = DecodeString(`[` + strings.Repeat(`1,`, 2000) + `"open`)
	require.Error(t, err, "a list cut short is still an error")
}
