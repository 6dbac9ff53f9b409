package queuety

import (
	"context"
	"log/slog"

	"github.com/queuety-go/queuety/queuety/internal/scheduler"
	store "github.com/queuety-go/queuety/sql"
)

// DefaultScheduleInterval is how often a worker runs the scheduler tick:
// the plugin's worker loop ticks every 60 s.
const DefaultScheduleInterval = scheduler.DefaultInterval

// newScheduler is the worker's scheduler loop (queuety/internal/scheduler)
// over the Client's tick: at start and every Config.ScheduleInterval. The
// time it compares next_run with is the Client's clock.
func newScheduler(c *Client, log *slog.Logger) *scheduler.Scheduler {
	p := &scheduler.Params{Interval: c.cfg.ScheduleInterval, Log: log, Clock: c.cfg.Clock, Tick: c.TickSchedules}
	if cfg := c.cfg; cfg.Debug && len(cfg.Queues) > 0 {
		// The plugin's Worker::run writes debug_log('Running scheduler
		// tick.', $primary_queue) before each tick: handler _worker, the
		// worker's first queue.
		p.DebugRow = func(ctx context.Context) error {
			return c.store.InsertLogs(ctx, []store.LogRow{debugRow(cfg.Queues[0], "Running scheduler tick.")})
		}
	}
	return scheduler.New(p)
}
