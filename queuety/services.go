package queuety

import (
	"context"
	"log/slog"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// heartbeater refreshes reserved_at of every attempt that has run longer
// than the heartbeat interval, in one UPDATE per tick, so neither our stale
// sweep nor PHP's takes a long job that is still running. An attempt whose
// row is gone or re-owned is cancelled with ErrJobLost.
type heartbeater struct {
	w    *Worker
	stop chan struct{}
	done chan struct{}
}

func (h *heartbeater) Start() {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.loop()
}

func (h *heartbeater) Stop() {
	close(h.stop)
	<-h.done
}

func (h *heartbeater) loop() {
	defer close(h.done)
	// Ticking at half the interval bounds the gap between two refreshes of
	// one row to 1.5 intervals, which Validate keeps under the stale timeout.
	t := time.NewTicker(h.w.cfg.HeartbeatInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			h.beat(now)
		}
	}
}

func (h *heartbeater) beat(now time.Time) {
	w := h.w
	due := now.Add(-w.cfg.HeartbeatInterval).UnixNano()
	w.mu.Lock()
	var ids []int64
	byID := map[int64]*running{}
	for _, set := range []map[int64]*running{w.running, w.settling} {
		for id, rj := range set {
			if rj.lastTouch.Load() <= due {
				ids = append(ids, id)
				byID[id] = rj
			}
		}
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lost, err := w.store.TouchJobs(ctx, w.id, ids)
	if err != nil {
		w.log.Warn("heartbeat failed; will retry next tick", "jobs", len(ids), "err", err)
		return
	}
	for _, rj := range byID {
		rj.touched(now)
	}
	for _, id := range lost {
		w.mu.Lock()
		_, running := w.running[id]
		w.mu.Unlock()
		if !running {
			continue // finished meanwhile: its completion was written
		}
		w.log.Warn("job no longer held by this worker; cancelling it", "job", id)
		byID[id].cancel(ErrJobLost)
	}
}

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
}

func (r *rescuer) Start() error {
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
	if res.Retried+res.Buried > 0 {
		r.log.Warn("recovered stale jobs", "retried", res.Retried, "buried", res.Buried)
	}
}

// sampleMemory refreshes the memory_peak_kb figure written on completed
// rows: live heap divided by the slots, at most once a second. PHP's
// resource admission reads MAX(memory_peak_kb) per handler, so this must be
// a per-job share, never the whole process (spec §7.7).
func (w *Worker) sampleMemory() {
	if time.Since(w.memAt) < time.Second {
		return
	}
	w.memAt = time.Now()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	w.memKB.Store(max(1, int64(s[0].Value.Uint64()/1024)/int64(w.cfg.Concurrency)))
}

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
