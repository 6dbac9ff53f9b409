package queuety

import (
	"context"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// pausedFreshFor is how long a site's batched look trusts its worker's
// paused-queue snapshot, in PauseCacheTTLs. The snapshot is read again only
// when the worker claims; past this age the look asks for every queue, so a
// queue resumed elsewhere is seen and the claim reads the snapshot anew.
const pausedFreshFor = 10

// sharedLook is a look at the due rows that many sites' workers on one
// server share (Sites.lookOnce; a siteRun is one site's part of it): where
// a site plugs into its worker's claim side.
type sharedLook interface {
	// lookError is the last batched look's error, nil when it worked.
	lookError() error
	// takeDue reports, once, that the look found rows due for this site.
	takeDue() bool
}

func (r *siteRun) lookError() error {
	if e := r.lookErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (r *siteRun) takeDue() bool { return r.due.Swap(false) }

// sharedIdleLook answers an idle lane's look from its server's batched look
// (Sites.lookOnce) when the worker is one of many sites: skip means nothing
// is due, so no claim is opened and no statement sent. A due answer is
// taken once, and the lane claims without looking again.
func (c *claimer) sharedIdleLook(l *lane) (skip bool, err error) {
	r := c.sharedLook
	if r == nil || !l.idle || c.Config.Debug {
		return false, nil
	}
	if err := r.lookError(); err != nil {
		// The claim would fail the same way: back off as for it.
		return true, err
	}
	if r.takeDue() {
		l.idle = false
		return false, nil
	}
	c.Stats.idleLooks.Add(1)
	return true, nil
}

// lookQueues are the queues the batched look asks about for this worker:
// those it serves, less the paused ones while its snapshot is fresh.
func (c *claimer) lookQueues() []string {
	return c.paused.open(c.Config.Queues, pausedFreshFor*c.Config.PauseCacheTTL)
}

// lookOnce is one poll of the sites on l's server: one batched look at
// them all when its gate opens (lookGate), nothing otherwise.
func (s *Sites) lookOnce(ctx context.Context, l *serverLook) {
	targets := s.targets(l)
	if len(targets) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	parts := lookParts(targets)
	now := time.Now()
	if !l.gate.open(lctx, now, parts) {
		return
	}
	l.gate.done(now, parts, s.look(ctx, lctx, l, targets, parts))
}

// look runs the batched look of targets (their parts) and reports whether
// it worked. When the statement fails (a database dropped, a table gone),
// each database is looked at alone, so only the sites of the failing one
// are reported.
func (s *Sites) look(ctx, lctx context.Context, l *serverLook, targets []lookTarget, parts []store.DueLook) bool {
	start := time.Now()
	due, err := l.looker.AnyDue(lctx, parts)
	l.counts.count(time.Since(start), err)
	if err == nil {
		s.answer(targets, due, nil)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	for _, group := range groupByDatabase(targets) {
		due, err := store.AnyDueAcross(lctx, l.db, lookParts(group))
		s.answer(group, due, err)
	}
	return false
}

func lookParts(targets []lookTarget) []store.DueLook {
	parts := make([]store.DueLook, len(targets))
	for i, t := range targets {
		parts[i] = store.DueLook{Store: t.w.store, Queues: t.w.claim.lookQueues(), Database: t.database}
	}
	return parts
}

// answer records a look's outcome and wakes the sites with work.
func (s *Sites) answer(targets []lookTarget, due []bool, err error) {
	for i, t := range targets {
		r := t.r
		if err != nil {
			if r.lookErr.Swap(&err) == nil {
				s.log.Warn("sites: the site's database does not answer; its worker backs off", "site", r.site.Name, "err", err)
			}
			r.set(SiteUnreachable, err)
			// The worker's own claim finds the error and backs off.
			t.w.claim.kick()
			continue
		}
		if r.lookErr.Swap(nil) != nil {
			s.log.Info("sites: the site's database answers again", "site", r.site.Name)
			r.set(SiteRunning, nil)
		}
		if due[i] {
			r.due.Store(true)
			t.w.claim.kick()
		}
	}
}
