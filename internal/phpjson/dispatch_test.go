package phpjson

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConcurrencyGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		group     string
		limit     int
		wantGroup string
		wantLimit int
	}{
		{" gpu\x00", 2, "gpu", 2}, {"\fgpu", 1, "\fgpu", 1}, {"gpu", 0, "", 0}, {"gpu", -1, "", 0}, {" \x0b", 3, "", 0},
	} {
		g, l := ConcurrencyGroup(tc.group, tc.limit)
		require.Equal(t, tc.wantGroup, g, "%q", tc.group)
		require.Equal(t, tc.wantLimit, l, "%q", tc.group)
	}
	g, l := ConcurrencyGroup("x", int64(4))
	require.Equal(t, "x", g)
	require.Equal(t, int64(4), l)
}
