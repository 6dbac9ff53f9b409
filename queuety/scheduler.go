package queuety

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
)

// scheduler runs the plugin's scheduler tick inside `work`: at start and
// every Config.ScheduleInterval (60 s, as the plugin's worker loop). The
// time it compares next_run with is the Client's clock. Ticks of other
// daemons and of PHP workers on the same table are safe: see
// Client.TickSchedules.
type scheduler struct {
	c        *Client
	interval time.Duration
	log      *slog.Logger
	tickerService
	// warned holds the rows already reported as unreadable, with the
	// expression reported, so a bad row is logged once, not every minute.
	warned map[int64]string
}

// newScheduler ticks at start and then every interval; its Stop waits for
// a tick under way: each row's transaction is short.
func newScheduler(c *Client, interval time.Duration, log *slog.Logger, clk clock.Clock) *scheduler {
	s := &scheduler{c: c, interval: interval, log: log, warned: map[int64]string{}}
	s.tickerService = tickerService{name: "scheduler", interval: interval, log: log, clock: clk,
		round: func(context.Context, time.Time) { s.tick() }}
	return s
}

func (s *scheduler) tick() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.logDebugRow(ctx)
	res, err := s.c.TickSchedules(ctx)
	if err != nil {
		s.log.Warn("scheduler tick failed; the rows stay due for the next tick", "err", err, "dispatched", res.Dispatched)
	}
	for _, u := range res.Unreadable {
		if s.warned[u.ID] == u.Err {
			continue
		}
		s.warned[u.ID] = u.Err
		s.log.Warn("schedule left alone: its expression cannot be computed here (the plugin's workers still tick it)",
			"schedule", u.ID, "handler", u.Handler, "err", u.Err)
	}
	if res.Dispatched+res.Skipped > 0 {
		s.log.Debug("scheduler tick", "dispatched", res.Dispatched, "skipped", res.Skipped, "waiting", res.Waiting)
	}
}

// logDebugRow writes the plugin's "Running scheduler tick." debug row
// before a tick when QUEUETY_DEBUG is on: handler _worker, the worker's
// first queue, as Worker::run's debug_log before each scheduler tick. A
// row that cannot be written costs the tick nothing.
func (s *scheduler) logDebugRow(ctx context.Context) {
	cfg := s.c.Config()
	if !cfg.Debug || len(cfg.Queues) == 0 {
		return
	}
	if err := s.c.store.InsertLogs(ctx, []store.LogRow{debugRow(cfg.Queues[0], "Running scheduler tick.")}); err != nil {
		s.log.Warn("could not write the scheduler tick's debug row", "err", err)
	}
}

// DefaultScheduleInterval is how often a worker runs the scheduler tick:
// the plugin's worker loop ticks every 60 s.
const DefaultScheduleInterval = 60 * time.Second
