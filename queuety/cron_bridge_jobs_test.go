package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// The WP-Cron bridge's jobs (handler __queuety_cron_<hook>, from a
// schedule Queuety::replace_wp_cron() wrote) have no handler in the plugin
// v0.22.0 either: a default worker leaves them to PHP untouched, and a
// worker that claims everything (--claim-all, --php) buries them at their
// first attempt as "Handler not found", where the plugin's worker buries
// them after its retries (docs/compat.md "Schedules").
func TestCronBridgeJobsAreLeftOrBuriedAsUnknownHandlers(t *testing.T) {
	t.Parallel()
	const payload = `{"wp_hook":"my_hook","wp_args":[]}`
	ins := "INSERT INTO {jobs} (queue, handler, payload, priority, max_attempts) VALUES ('default', '__queuety_cron_my_hook', ?, 0, 3)"

	left := newTestClient(t, nil)
	execSQL(t, left, ins, payload)
	reg := NewRegistry()
	done := make(chan struct{})
	reg.HandleFunc("marker", func(context.Context, *Job) error { close(done); return nil })
	_, err := left.Dispatch(context.Background(), "marker", nil)
	require.NoError(t, err)
	startWorker(t, left, reg)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker ran nothing")
	}
	j := jobRow(t, left, 1)
	require.Equal(t, store.StatusPending, j.Status, "left to PHP")
	require.Zero(t, j.Attempts)

	all := newTestClient(t, func(cfg *Config) { cfg.ClaimAll = true })
	execSQL(t, all, ins, payload)
	startWorker(t, all, NewRegistry())
	waitFor(t, 10*time.Second, "the cron job buried", func() bool { return jobRow(t, all, 1).Status == store.StatusBuried })
	j = jobRow(t, all, 1)
	require.Equal(t, 1, j.Attempts)
	require.Equal(t, "Handler not found: __queuety_cron_my_hook", j.ErrorMessage.String)
	require.Equal(t, []string{"started", "buried"}, logEvents(jobLogs(t, all, 1)))
}
