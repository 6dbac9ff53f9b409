package phppool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// makeStale turns a pending row into one a dead worker left: processing,
// attempts used, reserved an hour ago.
func makeStale(t *testing.T, c *queuety.Client, id int64, attempts int) {
	t.Helper()
	_, err := clientstore.Of(c).DB().Exec("UPDATE `"+clientstore.Of(c).Tables()["jobs"]+"` SET status = 'processing', attempts = ?, reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", attempts, id)
	require.NoError(t, err)
}

// secondsUntilAvailable is how far in the future a row becomes due.
func secondsUntilAvailable(t *testing.T, c *queuety.Client, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, clientstore.Of(c).DB().Get(&n, "SELECT TIMESTAMPDIFF(SECOND, NOW(), available_at) FROM `"+clientstore.Of(c).Tables()["jobs"]+"` WHERE id = ?", id))
	return n
}

// The stale sweep (a worker's, through the pool) and `queuety recover
// --php` decide a Contracts\Job row by its class's $tries and $backoff,
// as the plugin's recover_stale does, not by the row's max_attempts (3)
// and the default backoff: LongTimeoutJob ($tries 1) is buried after one
// attempt; StaleBackoffJob ($tries 5, $backoff [45, 90]) is retried after
// its third attempt (the row allows 3) with the last entry, 90 s.
func TestStaleSweepAndRecoverUseTheJobClassTriesAndBackoff(t *testing.T) {
	t.Parallel()
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	for _, via := range []string{"sweep", "recover"} {
		t.Run(via, func(t *testing.T) {
			c := newClient(t, nil)
			ids := phpDispatch(t, c,
				map[string]any{"handler": "LongTimeoutJob", "payload": map[string]any{"ms": 0}},
				map[string]any{"handler": "StaleBackoffJob", "payload": map[string]any{}})
			require.Equal(t, 3, jobRow(t, c, ids[0]).MaxAttempts, "the row's own limit")
			makeStale(t, c, ids[0], 1)
			makeStale(t, c, ids[1], 3) // the row's limit is used up; the class's is not
			switch via {
			case "sweep":
				reg := queuety.NewRegistry()
				reg.SetFallback(pool)
				res, err := c.RecoverStale(context.Background(), reg)
				require.NoError(t, err)
				require.Equal(t, queuety.Rescued{Retried: 1, Buried: 1}, res)
			case "recover":
				code, stdout, stderr := runCLI("recover", "--dsn", c.Config().DSN, "--php", phpFlag(t), "--php-workers", "1")
				require.Equal(t, cli.ExitOK, code, stderr)
				require.Equal(t, "Recovered 2 stale jobs (1 retried, 1 buried).\n", stdout)
			}
			require.Equal(t, store.StatusBuried, jobRow(t, c, ids[0]).Status, "$tries 1")
			r := jobRow(t, c, ids[1])
			require.Equal(t, store.StatusPending, r.Status, "$tries 5")
			require.InDelta(t, 90, secondsUntilAvailable(t, c, ids[1]), 5, "$backoff's entry for attempt 3 (the last one)")
		})
	}
}
