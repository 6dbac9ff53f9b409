package queuety

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// With QUEUETY_DEBUG on, each scheduler tick writes the plugin's debug row
// first (Worker::run: debug_log('Running scheduler tick.', $primary_queue)):
// handler _worker, the worker's first queue, no job. Off, it writes none.
func TestSchedulerTickDebugRow(t *testing.T) {
	t.Parallel()
	for _, debug := range []bool{true, false} {
		c := newTestClient(t, func(cfg *Config) {
			cfg.Debug = debug
			cfg.Queues = []string{"emails", "default"}
		})
		s := newScheduler(c, slog.New(slog.DiscardHandler))
		s.RunOnce(context.Background())
		s.RunOnce(context.Background())

		var rows []struct {
			JobID   *int64 `db:"job_id"`
			Handler string `db:"handler"`
			Queue   string `db:"queue"`
			Event   string `db:"event"`
			Context string `db:"context"`
		}
		require.NoError(t, c.store.DB().Select(&rows, "SELECT job_id, handler, queue, event, context FROM `"+c.store.Tables()["logs"]+"` ORDER BY id"))
		if !debug {
			require.Empty(t, rows, "debug off: no row")
			continue
		}
		require.Len(t, rows, 2, "one row a tick")
		for _, r := range rows {
			require.Nil(t, r.JobID)
			require.Equal(t, "_worker", r.Handler)
			require.Equal(t, "emails", r.Queue, "the worker's first queue")
			require.Equal(t, "debug", r.Event)
			require.Equal(t, `{"message":"Running scheduler tick."}`, r.Context)
		}
	}
}
