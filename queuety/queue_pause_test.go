package queuety

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// queue_pause.json: Queuety::pause() writes the queue_states row, a worker
// polling the paused queue logs "Queue 'default' is paused, skipping." and
// runs nothing, resume() deletes the row and the next drain runs the job.
// The plugin writes that row on every poll; the daemon writes it once per
// time it finds the queue paused (docs/compat.md), so a second claim round
// adds no row.
func TestFixtureQueuePause(t *testing.T) {
	t.Parallel()
	f := loadFixture2(t, "queue_pause.json")
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Queues = []string{"default", "critical"}
		cfg.PauseCacheTTL = 1 // read the queue states on every claim
	})
	snaps := f.Snapshots
	insertRecorded(t, c, rowsOf(snaps[0], "jobs"))
	require.NoError(t, c.Pause(ctx, "default"))
	queueStates := func() []map[string]any {
		var out []map[string]any
		for _, m := range tableRows(t, c, "queue_states", "queue") {
			out = append(out, map[string]any{"queue": string(m["queue"].([]byte)), "paused": m["paused"]})
		}
		return out
	}
	wantStates := func(snap map[string]any) []map[string]any {
		var out []map[string]any
		for _, r := range rowsOf(snap, "queue_states") {
			out = append(out, map[string]any{"queue": r["queue"], "paused": int64(r["paused"].(float64))})
		}
		return out
	}
	require.Equal(t, wantStates(snaps[0]), queueStates(), snaps[0]["after"])

	w, err := c.NewWorker(fixtureRegistry())
	require.NoError(t, err)
	require.Equal(t, 0, stepOnce(t, w), snaps[1]["after"])
	compareJobs(t, c, snaps[1]["after"].(string), rowsOf(snaps[1], "jobs"))
	compareLogs(t, c, snaps[1]["after"].(string), rowsOf(snaps[1], "logs"))
	require.Equal(t, 0, stepOnce(t, w), "a second poll of the paused queue")
	compareLogs(t, c, "a second poll of the paused queue", rowsOf(snaps[1], "logs"))

	require.NoError(t, c.Resume(ctx, "default"))
	require.Empty(t, queueStates(), snaps[2]["after"])
	compareLogs(t, c, snaps[2]["after"].(string), rowsOf(snaps[2], "logs"))

	require.Equal(t, 1, stepOnce(t, w), snaps[3]["after"])
	compareJobs(t, c, snaps[3]["after"].(string), rowsOf(snaps[3], "jobs"))
	compareLogs(t, c, snaps[3]["after"].(string), rowsOf(snaps[3], "logs"))
}
