package queuety

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stepOnce runs one claim round of at most one job synchronously, the way a
// recorded PHP worker ran one claim at a time, and waits for the job's
// outcome to be written. The worker must not be started.
func stepOnce(t *testing.T, w *Worker) int {
	t.Helper()
	if w.jobsCtx == nil {
		w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
		w.claimCtx, w.cancelClaim = context.WithCancel(context.Background())
		_ = w.completer.Start(context.Background())
		t.Cleanup(w.completer.Stop)
	}
	n, _, err := w.claimRound(w.lanes[0], 1)
	require.NoError(t, err)
	w.execWG.Wait()
	// Completions are written by the completer: wait for them.
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.settling) == 0
	}, 10*time.Second, time.Millisecond)
	return n
}

func stringsReplaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
