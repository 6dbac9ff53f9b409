package queuety

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
)

// heartbeater refreshes reserved_at of every attempt that has run longer
// than the heartbeat interval, in one UPDATE per tick, so neither our stale
// sweep nor PHP's takes a long job that is still running. An attempt whose
// row is gone or re-owned is cancelled with ErrJobLost.
type heartbeater struct {
	heartbeatParams
	tickerService
}

// heartbeatParams are what the heartbeater reads and writes: the worker's
// running attempts and the rows they hold.
type heartbeatParams struct {
	Jobs     *runningSet
	Store    jobToucher
	WorkerID string
	// Interval is Config.HeartbeatInterval: an attempt is touched once it
	// was last touched this long ago.
	Interval time.Duration
	Log      *slog.Logger
}

// jobToucher refreshes the rows of running attempts (store.Store).
type jobToucher interface {
	TouchJobs(ctx context.Context, workerID string, ids []int64) (lost []int64, err error)
}

// heartbeatTimeout bounds one round's UPDATE: a round that cannot write
// within it is retried on the next tick.
const heartbeatTimeout = 10 * time.Second

func newHeartbeater(p heartbeatParams) *heartbeater {
	h := &heartbeater{heartbeatParams: p}
	// Ticking at half the interval bounds the gap between two refreshes of
	// one row to 1.5 intervals, which Validate keeps under the stale timeout.
	// It ticks on the wall clock whatever the application clock is: the
	// attempts' lastTouch is wall time, and the stale sweeps compare
	// reserved_at with the database's NOW().
	h.tickerService = tickerService{name: "heartbeater", interval: p.Interval / 2, log: p.Log,
		clock: clock.Real{}, skipFirst: true, round: h.beat}
	return h
}

// beat is one round: touch the attempts due at now, cancel those whose
// rows this worker no longer holds.
func (h *heartbeater) beat(ctx context.Context, now time.Time) {
	byID := h.Jobs.touchedBefore(now.Add(-h.Interval).UnixNano())
	if len(byID) == 0 {
		return
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	lost, err := h.Store.TouchJobs(ctx, h.WorkerID, ids)
	if err != nil {
		h.Log.Warn("heartbeat failed; will retry next tick", "jobs", len(ids), "err", err)
		return
	}
	for _, rj := range byID {
		rj.touched(now)
	}
	for _, id := range lost {
		if !h.Jobs.isRunning(id) {
			continue // finished meanwhile: its completion was written
		}
		h.Log.Warn("job no longer held by this worker; cancelling it", "job", id)
		byID[id].cancel(ErrJobLost)
	}
}
