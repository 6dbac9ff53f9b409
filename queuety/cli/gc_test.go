package cli

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
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

// A daemon for many sites sets a soft memory limit that grows with the
// sites each discovery lists, but keeps one the operator set.
// Not parallel: the limit and the environment are the process's.
func TestManySitesScaleTheMemoryLimit(t *testing.T) {
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(limit) })
	log := slog.New(slog.DiscardHandler)
	var listed []queuety.Site
	discover := func(context.Context) ([]queuety.Site, error) { return listed, nil }

	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	debug.SetMemoryLimit(daemonMemoryLimit)
	scaled := limitMemoryBySites(discover, log)
	listed = make([]queuety.Site, 500)
	_, err := scaled(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(daemonMemoryLimit+500*siteMemoryLimit), debug.SetMemoryLimit(-1), "500 sites")
	listed = listed[:20] // a re-read found fewer
	_, err = scaled(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(daemonMemoryLimit+20*siteMemoryLimit), debug.SetMemoryLimit(-1), "20 sites")

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	_, err = limitMemoryBySites(discover, log)(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "GOMEMLIMIT=1GiB is kept")
}
