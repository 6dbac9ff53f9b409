package queuety

import (
	"context"
	"log/slog"
	"time"
)

// deadlineChecker runs Queuety's check_deadlines inside `work` with
// Config.Workflows: every Config.DeadlineInterval, running workflows past
// their deadline_at are failed (on_deadline, compensations).
type deadlineChecker struct {
	c        *Client
	reg      *Registry
	interval time.Duration
	log      *slog.Logger
	stop     chan struct{}
	done     chan struct{}
}

func (d *deadlineChecker) Start() {
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.done)
		t := time.NewTicker(d.interval)
		defer t.Stop()
		for {
			d.check()
			select {
			case <-d.stop:
				return
			case <-t.C:
			}
		}
	}()
}

func (d *deadlineChecker) Stop() {
	close(d.stop)
	<-d.done
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
