package queuety

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	store "github.com/queuety-go/queuety/sql"
)

// serverLook is the batched idle look of one database server.
type serverLook struct {
	dsn    string
	db     *sqlx.DB
	looker *store.DueLooker // the look's prepared statement, on db
	gate   *lookGate        // whether a poll runs the look; only lookLoop uses it
	own    ownWrites        // the read loop's writes, which the gate takes off
	stop   context.CancelFunc
	counts lookCounts // sites_observe.go
}

// lookLoop polls every started site of one server together, each
// LookInterval: when its gate opens, one look at all of them kicks the
// idle lanes of those with due jobs.
func (s *Sites) lookLoop(ctx context.Context, l *serverLook) {
	defer s.wg.Done()
	defer l.db.Close()
	defer l.looker.Close()
	t := time.NewTicker(s.cfg.LookInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.lookOnce(ctx, l)
	}
}

// readTick is how often a server's read loop asks which of its sites are
// due for a read of their tables (their webhooks every Webhooks.Refresh, a
// look for each of their siteLoops on its schedule): a site's round is at
// most this late.
const readTick = time.Second

// readLoop runs the slower batched reads of one server's sites: those
// each site's worker would otherwise send alone on its own tick.
func (s *Sites) readLoop(ctx context.Context, l *serverLook) {
	defer s.wg.Done()
	t := time.NewTicker(readTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		targets := s.targets(l)
		s.beatWorkers(ctx, l, targets, now)
		s.readHooks(ctx, l, targets, now)
		s.runLoops(ctx, l, targets, now)
	}
}

// dueTargets are the targets whose next run (at) is due at now, and, when
// one is, those due within half their interval (every) with it: so the
// sites of a server, started at different times, fall into one statement
// an interval. A site with no next run (0) is left out. A run is due at
// the read tick nearest its time: one due just after a tick would
// otherwise wait a whole tick more each time (an interval of one tick ran
// every two).
func dueTargets(targets []lookTarget, now time.Time, at func(*siteRun) *atomic.Int64, every func(*Worker) time.Duration) []lookTarget {
	var out []lookTarget
	due := false
	for _, t := range targets {
		next := at(t.r).Load()
		if next == 0 {
			continue
		}
		if next <= now.Add(readTick/2).UnixNano() {
			due = true
		}
		if next <= now.Add(every(t.w)/2).UnixNano() {
			out = append(out, t)
		}
	}
	if !due {
		return nil
	}
	return out
}

// beatWorkers writes the registration heartbeat of the sites of l's
// server whose heartbeat is due, in one statement every 60 sites and one
// read (store.HeartbeatWorkersAcross): the values each worker's own
// heartbeat writes. A site whose registration is gone (an operator
// deregistered it) runs its worker's own heartbeat, which registers it
// again. When the statement fails, each database is written alone; a
// failing one's sites try again at their next heartbeat, as a worker's
// own failed heartbeat does.
func (s *Sites) beatWorkers(ctx context.Context, l *serverLook, all []lookTarget, now time.Time) {
	targets := dueTargets(all, now, func(r *siteRun) *atomic.Int64 { return &r.beatAt },
		func(w *Worker) time.Duration { return w.cfg.RegistrationHeartbeat })
	if len(targets) == 0 {
		return
	}
	beats := make(map[*siteRun]store.WorkerBeat, len(targets))
	var ok []lookTarget
	for _, t := range targets {
		t.r.beatAt.Store(now.Add(t.w.cfg.RegistrationHeartbeat).UnixNano())
		b, err := t.w.c.sessions.Beat(t.w.cfg.Namespace, t.w.id, nil, t.w.claim.metrics())
		if err != nil {
			t.w.log.Warn("worker registration heartbeat failed; will retry", "err", err)
			continue
		}
		b.SiteTables = t.tables()
		beats[t.r] = b
		ok = append(ok, t)
	}
	// The look's gate takes these writes off the server's counters.
	l.own.begin()
	defer l.own.end()
	acrossServer(ctx, s.log, ok, sessionCallTimeout, "sites: worker registration heartbeats failed; will retry",
		func(rctx context.Context, group []lookTarget) ([]bool, error) {
			gbeats := make([]store.WorkerBeat, len(group))
			for i, t := range group {
				gbeats[i] = beats[t.r]
			}
			registered, changed, err := store.HeartbeatWorkersAcross(rctx, l.db, gbeats)
			l.own.changed(changed)
			return registered, err
		},
		// Each heartbeat bounds itself (sessionCallTimeout).
		func(group []lookTarget, registered []bool) { s.reregister(ctx, group, registered) })
}

// reregister runs the own heartbeat of the sites whose registration a
// batched heartbeat found gone: it writes the registration again. A site
// stopped meanwhile (its worker deregistered itself) is left alone. The
// site's beatMu, not its mu, is held over the heartbeat's round trip: a
// stop that begins now waits for it and deregisters after it, while the
// looks, Status and /readyz, which take mu, go on.
func (s *Sites) reregister(ctx context.Context, targets []lookTarget, registered []bool) {
	for i, t := range targets {
		if registered[i] {
			continue
		}
		t.r.beatMu.Lock()
		t.r.mu.Lock()
		current := t.r.worker == t.w
		t.r.mu.Unlock()
		if current {
			t.w.sessions.heartbeat(ctx)
		}
		t.r.beatMu.Unlock()
	}
}

// readHooks reads the webhooks of the sites of l's server whose refresh
// is due (dueTargets), in one statement, and hands each its rows. When
// the statement fails, each database is read alone, and the sites of a
// failing one keep their last read until their next refresh, as a
// worker's own failed refresh does.
func (s *Sites) readHooks(ctx context.Context, l *serverLook, all []lookTarget, now time.Time) {
	targets := dueTargets(all, now, func(r *siteRun) *atomic.Int64 { return &r.hooksAt },
		func(w *Worker) time.Duration { return w.cfg.Webhooks.Refresh })
	if len(targets) == 0 {
		return
	}
	for _, t := range targets {
		t.r.hooksAt.Store(now.Add(t.w.cfg.Webhooks.Refresh).UnixNano())
	}
	acrossServer(ctx, s.log, targets, batchReadTimeout, "sites: reading the webhooks tables failed; keeping the last read",
		func(rctx context.Context, group []lookTarget) ([][]store.WebhookRow, error) {
			return store.WebhooksAcross(rctx, l.db, tableParts(group))
		},
		func(group []lookTarget, hooks [][]store.WebhookRow) {
			for i, t := range group {
				t.w.hooks.Load(hooks[i])
			}
		})
}

// batchReadTimeout bounds one batched read of a server's sites, and each
// read of its fallback apart: a batch that timed out behind one table
// under a metadata lock must leave the other databases' reads a time of
// their own, or they all fail on its expired ctx and every site of the
// server is reported with it.
const batchReadTimeout = 10 * time.Second

// acrossServer runs read over the targets of one server in one statement
// and hands use its answer. When the statement fails, each database's
// targets are read alone, so a failing database (dropped, a table gone)
// costs only its own sites: failed is logged for it, and its sites get
// nothing until their next round. Each read gets a ctx of timeout of its
// own.
func acrossServer[T any](ctx context.Context, log *slog.Logger, targets []lookTarget, timeout time.Duration, failed string,
	read func(context.Context, []lookTarget) (T, error), use func([]lookTarget, T)) {
	readWithin := func(group []lookTarget) (T, error) {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return read(rctx, group)
	}
	if v, err := readWithin(targets); err == nil {
		use(targets, v)
		return
	}
	if ctx.Err() != nil {
		return
	}
	for _, group := range groupByDatabase(targets) {
		v, err := readWithin(group)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn(failed, "database", group[0].database, "sites", len(group), "err", err)
			}
			continue
		}
		use(group, v)
	}
}

// targets are the started sites of l's server, by name: in the same
// order each time, a look's statement stays the same and its prepared
// statement serves again.
func (s *Sites) targets(l *serverLook) []lookTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	var targets []lookTarget
	for _, r := range s.sites {
		r.mu.Lock()
		if r.worker != nil && r.db.server == l.dsn {
			targets = append(targets, lookTarget{r: r, w: r.worker, database: r.db.database})
		}
		r.mu.Unlock()
	}
	slices.SortFunc(targets, func(a, b lookTarget) int { return strings.Compare(a.r.site.Name, b.r.site.Name) })
	return targets
}

// groupByDatabase splits targets by database: a batched statement that
// failed is sent again for each, so a dropped database fails only its own
// sites.
func groupByDatabase(targets []lookTarget) [][]lookTarget {
	byDB := map[string][]lookTarget{}
	for _, t := range targets {
		byDB[t.database] = append(byDB[t.database], t)
	}
	return slices.Collect(maps.Values(byDB))
}

func tableParts(targets []lookTarget) []store.SiteTables {
	parts := make([]store.SiteTables, len(targets))
	for i, t := range targets {
		parts[i] = t.tables()
	}
	return parts
}

// lookTarget is a started site as one look found it.
type lookTarget struct {
	r        *siteRun
	w        *Worker
	database string
}

// tables names the site's tables in a batched statement.
func (t lookTarget) tables() store.SiteTables {
	return store.SiteTables{Store: t.w.store, Database: t.database}
}
