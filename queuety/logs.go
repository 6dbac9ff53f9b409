package queuety

import (
	"context"
	"errors"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// LogFilter selects log rows (`queuety log`, Queuety::query_logs).
type LogFilter = store.LogFilter

// LogRow is one row of the logs table.
type LogRow = store.LogRow

// HandlerStats is one handler's line of `queuety metrics`.
type HandlerStats = store.HandlerStats

// Logs returns the log rows f selects.
func (c *Client) Logs(ctx context.Context, f LogFilter) ([]LogRow, error) {
	if f.Limit < 0 {
		return nil, errors.New("log limit must not be negative")
	}
	return c.store.QueryLogs(ctx, f)
}

// HandlerMetrics is Queuety::handler_metrics(minutes): per handler, the
// completed and failed (failed + buried) log rows of the last window, the
// mean and 95th percentile duration of completions and the error rate,
// computed from the logs table as the plugin's Metrics does.
func (c *Client) HandlerMetrics(ctx context.Context, window time.Duration) ([]HandlerStats, error) {
	if window < 0 {
		return nil, errors.New("metrics window must not be negative")
	}
	return c.store.HandlerStats(ctx, c.cfg.Clock.Now().Add(-window))
}
