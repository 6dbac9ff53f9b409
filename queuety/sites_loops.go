package queuety

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/queuety/internal/startstop"
	store "github.com/queuety-go/queuety/sql"
)

// siteLoop is one of a worker's loops whose rounds Sites kicks
// (startstop.Loop.Kicked, the first too): on each site's own schedule (its
// loop's Next), one statement looks at every site of a server due for a round,
// each by its own settings, and only the sites it found something for run
// their round; the others' round would have found nothing. An idle site
// so sends no statement of its own for it.
type siteLoop struct {
	name string
	// of is the worker's loop, nil when it runs none (or keeps its own).
	of func(w *Worker) *startstop.Loop
	// look tells, in one statement for sites of one server, which have
	// something for a round now.
	look func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error)
	// idle, when set, is told of a site whose look found nothing: the
	// round it stands for.
	idle func(w *Worker)
}

// siteLoops are the loops Sites runs this way; siteRun.loopAt holds each
// site's next round of each, by index.
var siteLoops = []siteLoop{
	{
		// With Debug every tick writes the plugin's debug row, so the
		// worker keeps its own.
		name: "scheduler tick",
		of: func(w *Worker) *startstop.Loop {
			if w.cfg.Debug {
				return nil
			}
			return loopOf(w.scheduler)
		},
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			looks := make([]store.ScheduleLook, len(sites))
			for i, t := range sites {
				looks[i] = store.ScheduleLook{SiteTables: t.tables(), Now: t.w.store.Now()}
			}
			return store.SchedulesDueAcross(ctx, db, looks)
		},
	},
	{
		name: "stale sweep",
		of:   func(w *Worker) *startstop.Loop { return loopOf(w.rescuer) },
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			looks := make([]store.StaleLook, len(sites))
			for i, t := range sites {
				// RecoverStale's cutoff and scope.
				looks[i] = store.StaleLook{SiteTables: t.tables(), Cutoff: t.w.cfg.Clock.Now().Add(-t.w.cfg.StaleTimeout),
					Steps: t.w.cfg.Workflows}
			}
			return store.StaleAcross(ctx, db, looks)
		},
	},
	{
		name: "retention sweep",
		of:   func(w *Worker) *startstop.Loop { return loopOf(w.retention) },
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			looks := make([]store.RetentionLook, len(sites))
			for i, t := range sites {
				// Purge's cutoffs for the policy the worker's sweep runs.
				now := t.w.cfg.Clock.Now()
				cutoffs := map[store.RetentionKind]time.Time{}
				for k, age := range RetentionPolicyOf(t.w.cfg) {
					cutoffs[store.RetentionKind(k)] = now.Add(-age)
				}
				looks[i] = store.RetentionLook{SiteTables: t.tables(), Cutoffs: cutoffs}
			}
			return store.RetentionDueAcross(ctx, db, looks)
		},
		idle: func(w *Worker) { w.retention.Idle() },
	},
	{
		name: "deadline check",
		of:   func(w *Worker) *startstop.Loop { return loopOf(w.deadlines) },
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			return store.DeadlinesDueAcross(ctx, db, tableParts(sites))
		},
	},
	{
		name: "wait sweep",
		of:   func(w *Worker) *startstop.Loop { return loopOf(w.waitSweeper) },
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			return store.WaitsDueAcross(ctx, db, tableParts(sites))
		},
	},
	{
		name: "signal poll",
		of:   func(w *Worker) *startstop.Loop { return loopOf(w.signalPoller) },
		look: func(ctx context.Context, db *sqlx.DB, sites []lookTarget) ([]bool, error) {
			looks := make([]store.SignalLook, len(sites))
			for i, t := range sites {
				looks[i] = store.SignalLook{SiteTables: t.tables(), After: t.w.signalPoller.From()}
			}
			return store.SignalsDueAcross(ctx, db, looks)
		},
		// The poller counts the round, so its rounds from the first
		// signal keep their cadence.
		idle: func(w *Worker) { w.signalPoller.Skip() },
	},
}

// loopOf is v's loop, nil when v is.
func loopOf[T interface {
	comparable
	Loop() *startstop.Loop
}](v T) *startstop.Loop {
	var none T
	if v == none {
		return nil
	}
	return v.Loop()
}

// handOverLoops, before the worker starts, leaves every round of its
// siteLoops to Sites, the first too: a worker alone runs one at start (a
// restart after a crash rescues at once), which for hundreds of sites
// starting together is hundreds of statements of each loop; the first
// batched look, at the next read tick, stands for them.
func handOverLoops(w *Worker) {
	for _, sl := range siteLoops {
		if l := sl.of(w); l != nil {
			l.Kicked, l.SkipFirst = true, true
		}
	}
}

// scheduleLoops makes the first round of each of r's worker's siteLoops
// due at now, once the worker started.
func scheduleLoops(r *siteRun, w *Worker, now time.Time) {
	for k, sl := range siteLoops {
		if sl.of(w) != nil {
			r.loopAt[k].Store(now.UnixNano())
		}
	}
}

// runLoops runs every siteLoop's round that is due on the sites of l's
// server.
func (s *Sites) runLoops(ctx context.Context, l *serverLook, targets []lookTarget, now time.Time) {
	for k := range siteLoops {
		s.runLoop(ctx, l, targets, now, k)
	}
}

// runLoop looks, in one statement, at the sites of l's server whose round
// of siteLoops[k] is due (dueTargets: with them, those due within half
// their interval), and kicks the loop of each it found something for.
// When the statement fails, each database is looked at alone; a failing
// one's sites are looked at again at their next round, as a failed round
// of their own leaves its rows for the next.
func (s *Sites) runLoop(ctx context.Context, l *serverLook, all []lookTarget, now time.Time, k int) {
	sl := &siteLoops[k]
	var runs []lookTarget
	for _, t := range all {
		if sl.of(t.w) != nil {
			runs = append(runs, t)
		}
	}
	targets := dueTargets(runs, now, func(r *siteRun) *atomic.Int64 { return &r.loopAt[k] },
		func(w *Worker) time.Duration { return sl.of(w).Next(now).Sub(now) })
	if len(targets) == 0 {
		return
	}
	for _, t := range targets {
		t.r.loopAt[k].Store(sl.of(t.w).Next(now).UnixNano())
	}
	acrossServer(ctx, s.log, targets, batchReadTimeout, "sites: the batched look of the "+sl.name+" failed; looked at again at the sites' next round",
		func(lctx context.Context, group []lookTarget) ([]bool, error) { return sl.look(lctx, l.db, group) },
		func(group []lookTarget, yes []bool) {
			for i, t := range group {
				switch {
				case yes[i]:
					// The round runs on the loop's own goroutine, so
					// the worker's Stop ends it and waits for it.
					sl.of(t.w).Kick()
				case sl.idle != nil:
					sl.idle(t.w)
				}
			}
		})
}
