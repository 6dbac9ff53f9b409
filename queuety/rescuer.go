package queuety

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// rescuer runs the stale sweep on a cron schedule inside `work`, and once
// at start so a restart after a crash recovers at once.
type rescuer struct {
	c        *Client
	reg      *Registry
	schedule string
	log      *slog.Logger
	cron     *cron.Cron
	mu       sync.Mutex // one sweep at a time
	// troubleAt returns when the worker last lost its database connection
	// (unix nanos, 0: never); no sweep runs until holdOff has passed since.
	// During an outage no worker could heartbeat, so right after it every
	// running job looks stale; two heartbeat intervals give them all time
	// to refresh their rows (and to write completions that waited).
	troubleAt func() int64
	holdOff   time.Duration
	obs       Observer // Config.Observer: told of each sweep's recoveries
}

func (r *rescuer) Start(context.Context) error {
	r.cron = cron.New(cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
	if _, err := r.cron.AddFunc(r.schedule, r.sweep); err != nil {
		return err
	}
	r.cron.Start()
	go r.sweep()
	return nil
}

func (r *rescuer) Stop() {
	<-r.cron.Stop().Done()
	r.mu.Lock() // wait for a sweep started outside cron
	defer r.mu.Unlock()
}

func (r *rescuer) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.troubleAt != nil {
		if at := r.troubleAt(); at != 0 && time.Since(time.Unix(0, at)) < r.holdOff {
			r.log.Info("stale sweep postponed: the database connection was lost moments ago", "hold_off", r.holdOff)
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.c.RecoverStale(ctx, r.reg)
	if err != nil {
		r.log.Warn("stale sweep failed", "err", err)
		return
	}
	if o := sweepObserver(r.obs); o != nil {
		o.ObserveRescue(res.Retried, res.Buried)
	}
	if res.Retried+res.Buried > 0 {
		r.log.Warn("recovered stale jobs", "retried", res.Retried, "buried", res.Buried)
	}
}
