package queuety

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
)

// deadlineChecker runs Queuety's check_deadlines inside `work` with
// Config.Workflows: every Config.DeadlineInterval, running workflows past
// their deadline_at are failed (on_deadline, compensations).
type deadlineChecker struct {
	c        *Client
	reg      *Registry
	interval time.Duration
	log      *slog.Logger
	tickerService
}

func newDeadlineChecker(c *Client, reg *Registry, interval time.Duration, log *slog.Logger, clk clock.Clock) *deadlineChecker {
	d := &deadlineChecker{c: c, reg: reg, interval: interval, log: log}
	d.tickerService = tickerService{name: "deadline checker", interval: interval, log: log, clock: clk,
		round: func(context.Context, time.Time) { d.check() }}
	return d
}

func (d *deadlineChecker) check() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := d.c.CheckDeadlines(ctx, d.reg)
	if err != nil {
		d.log.Warn("workflow deadline check failed", "err", err)
	}
	if n > 0 {
		d.log.Warn("workflows failed by their deadline", "count", n)
	}
}
