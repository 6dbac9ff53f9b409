package queuety

import (
	"context"
	"fmt"

	store "github.com/queuety-go/queuety/sql"
)

// logNewlyPaused writes the plugin's row for a paused queue this worker
// serves (Worker::run: handler _worker, event started, "Queue 'q' is
// paused, skipping.") once each time the worker finds the queue paused
// after it was not: the plugin writes it on every poll of the queue, once a
// second or so, and a Go worker reads the queue states far more often, so
// a row per read would flood the logs table while the signal stays the
// same.
func (w *Worker) logNewlyPaused(ctx context.Context, before, now map[string]bool) {
	var rows []store.LogRow
	for _, q := range w.cfg.Queues {
		if now[q] && !before[q] {
			rows = append(rows, workerRow(q, store.EventStarted, fmt.Sprintf("Queue '%s' is paused, skipping.", q)))
		}
	}
	if len(rows) == 0 {
		return
	}
	if err := w.store.InsertLogs(ctx, rows); err != nil {
		w.log.Warn("logging a paused queue failed", "err", err)
	}
}
