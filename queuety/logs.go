package queuety

import (
	"context"
	"errors"
	"time"

	"github.com/queuety-go/queuety/queuety/internal/rowview"
)

// Logs returns the log rows f selects.
func (c *Client) Logs(ctx context.Context, f LogFilter) ([]LogEntry, error) {
	if f.Limit < 0 {
		return nil, errors.New("log limit must not be negative")
	}
	rows, err := c.store.QueryLogs(ctx, rowview.StoreLogFilter(f))
	return rowview.Logs(rows), err
}

// HandlerMetrics is Queuety::handler_metrics(minutes): per handler, the
// completed and failed (failed + buried) log rows of the last window, the
// mean and 95th percentile duration of completions and the error rate,
// computed from the logs table as the plugin's Metrics does.
func (c *Client) HandlerMetrics(ctx context.Context, window time.Duration) ([]HandlerStats, error) {
	if window < 0 {
		return nil, errors.New("metrics window must not be negative")
	}
	stats, err := c.store.HandlerStats(ctx, c.cfg.Clock.Now().Add(-window))
	return rowview.Handlers(stats), err
}
