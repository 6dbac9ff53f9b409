package queuety

import (
	"context"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
)

// heartbeater refreshes reserved_at of every attempt that has run longer
// than the heartbeat interval, in one UPDATE per tick, so neither our stale
// sweep nor PHP's takes a long job that is still running. An attempt whose
// row is gone or re-owned is cancelled with ErrJobLost.
type heartbeater struct {
	w *Worker
	tickerService
}

func newHeartbeater(w *Worker) *heartbeater {
	h := &heartbeater{w: w}
	// Ticking at half the interval bounds the gap between two refreshes of
	// one row to 1.5 intervals, which Validate keeps under the stale timeout.
	// It ticks on the wall clock whatever the application clock is: the
	// attempts' lastTouch is wall time, and the stale sweeps compare
	// reserved_at with the database's NOW().
	h.tickerService = tickerService{name: "heartbeater", interval: w.cfg.HeartbeatInterval / 2, log: w.log,
		clock: clock.Real{}, skipFirst: true, round: func(_ context.Context, now time.Time) { h.beat(now) }}
	return h
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
