package queuety

import (
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
)

// Outcome is how a job attempt ended, as an Observer sees it.
type Outcome string

// Outcomes of a job attempt.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeRetried   Outcome = "retried"
	OutcomeBuried    Outcome = "buried"
)

// Observer is told what a worker does, for metrics (Config.Observer). Its
// methods are called on the worker's hot paths, from many goroutines at
// once: they must be safe for concurrent use and must not block.
type Observer interface {
	// ObserveClaim reports one claim round: how long it took, from the
	// transaction's start to its commit, and how many jobs it took.
	ObserveClaim(d time.Duration, jobs int)
	// ObserveJob reports a finished attempt whose outcome was recorded
	// (or, for a completion, queued for writing).
	ObserveJob(queue, handler string, outcome Outcome, d time.Duration)
}

// SweepObserver, when the Config.Observer implements it too, is told of
// the worker's queue waits and background sweeps (metrics). Its methods
// must be safe for concurrent use and must not block.
type SweepObserver interface {
	// ObserveQueueWait reports how long a claimed job waited between
	// becoming due (available_at) and its claim.
	ObserveQueueWait(queue string, d time.Duration)
	// ObserveRescue reports one stale sweep's recoveries.
	ObserveRescue(retried, buried int)
	// ObserveRetention reports one retention sweep: its result (ok,
	// failed, skipped: another process held the lock) and the rows it
	// deleted by kind.
	ObserveRetention(result string, deleted map[RetentionKind]int)
}

// sweepObserver is the Observer's SweepObserver side, or nil.
func sweepObserver(o Observer) SweepObserver {
	s, _ := o.(SweepObserver)
	return s
}

// observers tells the configured Observer (Config.Observer, nil: nobody)
// what the worker's parts do, through whichever of its optional sides it
// implements. The claimer reports its rounds, the recorder its outcomes.
type observers struct {
	o     Observer
	clock clock.Clock // the worker's: a claimed row's queue wait ends on it
}

// observeClaimed reports the queue wait of the claimed rows: from their
// available_at (the database's clock, as the claim's NOW() compared it) to
// now on the worker's clock.
func (ob observers) observeClaimed(rows []store.JobRow) {
	s := sweepObserver(ob.o)
	if s == nil {
		return
	}
	now := ob.clock.Now()
	for i := range rows {
		if rows[i].AvailableAt.IsZero() {
			continue
		}
		s.ObserveQueueWait(rows[i].Queue, now.Sub(rows[i].AvailableAt))
	}
}

// ClaimRollbackObserver is an Observer that also counts the claims the
// server rolled back (deadlocks, lock waits, a cluster's certification
// failures). Optional, so Observers written before it keep working.
type ClaimRollbackObserver interface {
	ObserveClaimRollback()
}

// observeClaimRollback tells the configured Observer, if it counts them,
// about a rolled-back claim.
func (ob observers) observeClaimRollback() {
	if o, ok := ob.o.(ClaimRollbackObserver); ok {
		o.ObserveClaimRollback()
	}
}

// observeJob tells the configured Observer, if any, about an attempt.
func (ob observers) observeJob(row *store.JobRow, o Outcome, d time.Duration) {
	if ob.o != nil {
		ob.o.ObserveJob(row.Queue, row.Handler, o, d)
	}
}

// observeClaim tells the configured Observer, if any, about a claim round.
func (ob observers) observeClaim(start time.Time, jobs int) {
	if ob.o != nil {
		ob.o.ObserveClaim(time.Since(start), jobs)
	}
}

// Slots reports the worker's job slots: busy ones and the total
// (Config.Concurrency).
func (w *Worker) Slots() (busy, total int) {
	return w.claim.busySlots(), w.cfg.Concurrency
}

// Ready reports whether the worker has started and is not stopping.
func (w *Worker) Ready() bool { return w.ready.Load() }
