package cli

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The daemon's GC target applies only when the environment set none.
// Not parallel: the GC percent and the environment are the process's.
func TestGCTargetFollowsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	gcTarget()
	require.Equal(t, daemonGOGC, debug.SetGCPercent(100), "GOGC unset")

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50) // what the runtime read at start
	gcTarget()
	require.Equal(t, 50, debug.SetGCPercent(100), "GOGC=50 is kept")

	t.Setenv("GOGC", "off")
	debug.SetGCPercent(-1)
	gcTarget()
	require.Equal(t, -1, debug.SetGCPercent(100), "GOGC=off is kept")
}
