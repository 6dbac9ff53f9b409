package cli

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The daemon's GC target applies only when the environment set none.
// Not parallel: the GC percent and the environment are the process's.
func TestGCTargetFollowsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(before); debug.SetMemoryLimit(limit) })

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

// The daemon's soft memory limit applies only when GOMEMLIMIT is not set.
// Not parallel: the limit and the environment are the process's.
func TestGCTargetSetsAMemoryLimitUnlessGOMEMLIMIT(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit); debug.SetGCPercent(percent) })

	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	debug.SetMemoryLimit(math.MaxInt64) // the runtime's default
	gcTarget()
	require.Equal(t, int64(daemonMemoryLimit), debug.SetMemoryLimit(-1), "GOMEMLIMIT unset")

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30) // what the runtime read at start
	gcTarget()
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "GOMEMLIMIT=1GiB is kept")
}

// A daemon for many sites drops the single site's soft memory limit (its
// live heap is larger by design), but keeps one the operator set.
// Not parallel: the limit and the environment are the process's.
func TestManySitesLiftTheMemoryLimit(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) })

	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	debug.SetMemoryLimit(daemonMemoryLimit)
	liftMemoryLimit()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "GOMEMLIMIT unset: no limit")

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	liftMemoryLimit()
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "GOMEMLIMIT=1GiB is kept")
}
