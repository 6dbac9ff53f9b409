package phppool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// A pool job's completed row logs the PHP process's peak memory, the
// figure the plugin's worker logs, not the Go worker's: a job that holds
// 40 MiB in PHP logs at least that much.
func TestPoolJobLogsPHPsMemoryPeak(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	startWorker(t, c, pool)
	d, err := c.Dispatch(context.Background(), "memory", map[string]any{"mb": 40})
	id := d.ID
	require.NoError(t, err)
	waitStatus(t, c, "completed", id)
	var peak int64
	for _, l := range jobLogs(t, c, id) {
		if l.Event == "completed" {
			require.True(t, l.MemoryPeakKB.Valid)
			peak = l.MemoryPeakKB.Int64
		}
	}
	require.GreaterOrEqual(t, peak, int64(40<<10), "memory_peak_kb %d KiB", peak)
}
