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
	startUnclaimed(t, w)
	n, _, err := w.claim.round(context.Background(), w.claim.lanes[0], 1)
	require.NoError(t, err)
	w.run.wg.Wait()
	// Completions are written by the completer: wait for them.
	require.Eventually(t, func() bool {
		return w.jobs.settlingCount() == 0
	}, 10*time.Second, time.Millisecond)
	return n
}

// startUnclaimed readies a worker for claim rounds a test runs itself: the
// jobs' context and the completer run, and the claimer counts as claiming
// (so steps chain as under a started worker), with no lane running.
func startUnclaimed(t *testing.T, w *Worker) {
	t.Helper()
	if w.run.jobsCtx != nil {
		return
	}
	w.run.start(context.Background())
	w.claim.state.Store(claimerClaiming)
	_ = w.completer.Start(context.Background())
	t.Cleanup(w.completer.Stop)
}

func stringsReplaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
