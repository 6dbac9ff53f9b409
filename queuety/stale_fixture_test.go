package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFixtureStaleCustomTimeout replays stale_custom_timeout.json: with the
// site's QUEUETY_STALE_TIMEOUT of 120 s the sweep leaves the 60 s old job
// alone, retries job 1 with the exponential backoff of attempt 1 (60 s),
// buries job 3 and the single-attempt step with the plugin's message
// (reserved_at kept, a `buried` log row without attempt), fails the step's
// workflow with a `workflow_failed` log row whose handler is ”, and
// writes nothing else (no workflow events, batches, webhooks).
func TestFixtureStaleCustomTimeout(t *testing.T) {
	t.Parallel()
	var f wfFixture
	readFixtureInto(t, "stale_custom_timeout.json", &f)
	require.Len(t, f.Snapshots, 3)
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.StaleTimeout = 120 * time.Second
	})
	// The recording's clock read 11:09:01 when the rows were made; move
	// every time by the same amount so their ages are the recorded ones.
	recordedNow := parseTime(t, f.Snapshots[0].Jobs[0]["created_at"])
	shift := time.Now().UTC().Truncate(time.Second).Sub(recordedNow)
	jobs := make([]map[string]any, len(f.Snapshots[0].Jobs))
	for i, j := range f.Snapshots[0].Jobs {
		row := map[string]any{}
		for k, v := range j {
			if s, ok := v.(string); ok && timeColumns[k] {
				v = parseTime(t, s).Add(shift).Format(time.DateTime)
			}
			row[k] = v
		}
		jobs[i] = row
	}
	insertRecordedWorkflows(t, c, f.Snapshots[0].Workflows)
	insertRecorded(t, c, jobs)
	insertRecordedLogs(t, c, f.Snapshots[0].Logs)

	res, err := c.RecoverStale(context.Background(), fixtureRegistry())
	require.NoError(t, err)
	require.Equal(t, Rescued{Retried: 1, Buried: 2}, res, "the plugin's recover_stale_jobs() returned 3")
	snap := f.Snapshots[1]
	compareJobs(t, c, snap.After, snap.Jobs)
	compareLogs(t, c, snap.After, snap.Logs)
	for _, want := range snap.Workflows {
		got := workflowRow(t, c, int64(want["id"].(float64)))
		require.Equal(t, want["status"], got.Status)
		require.Equal(t, want["state"], got.State)
		require.Equal(t, want["error_message"], got.ErrorMessage.String)
		require.True(t, got.FailedAt.Valid)
		require.Equal(t, int(want["current_step"].(float64)), got.CurrentStep)
	}
	for _, table := range []string{"workflow_events", "batches", "webhooks", "signals", "state_machines", "chunks"} {
		var n int
		require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()[table]+"`"))
		require.Zero(t, n, "%s: the plugin writes no %s rows on a stale sweep", snap.After, table)
	}

	// The drain: job 1 runs as attempt 2; the live job 2 stays processing.
	_, err = c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW() WHERE status = 'pending'")
	require.NoError(t, err)
	w, err := c.NewWorker(fixtureRegistry())
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	snap = f.Snapshots[2]
	compareJobs(t, c, snap.After, snap.Jobs)
	compareLogs(t, c, snap.After, snap.Logs)
	require.Equal(t, 0, stepOnce(t, w))
}
