package queuety

import "sync/atomic"

// A worker run from system cron stops on its own, as the plugin's
// `wp queuety work --once` and `wp queuety flush` do: after a number of
// jobs (Config.MaxJobs), or once nothing it can claim is left (Drained).

// workerLimits holds the claim budget and the finish counter Drained
// compares claim rounds with.
type workerLimits struct {
	// jobBudget is the worker's own Config.MaxJobs, or one shared by the
	// workers of many sites (Sites' MaxJobs: a total over all of them).
	*jobBudget
	// finished counts jobs that left the worker (written, failed, handed
	// back): a claim round that began after the last of them saw every
	// row they enqueued (a workflow's next step, a retry due now).
	finished atomic.Int64
}

// jobBudget is a number of claims in all, taken by one worker's lanes or
// by the lanes of several workers.
type jobBudget struct {
	max int64 // 0: no limit
	// budget is the claims neither made nor reserved by a round in
	// flight, or -1: no limit.
	budget atomic.Int64
	// claimed counts the claims made (committed) against max.
	claimed atomic.Int64
	// shared: other workers' lanes take from it too.
	shared bool
}

func newJobBudget(maxJobs int, shared bool) *jobBudget {
	b := &jobBudget{shared: shared}
	if maxJobs > 0 {
		b.max = int64(maxJobs)
		b.budget.Store(b.max)
	} else {
		b.budget.Store(-1)
	}
	return b
}

func (c *claimer) initLimits(maxJobs int) {
	for _, ln := range c.lanes {
		ln.idleAfter.Store(laneClaiming) // no round yet: not drained
		ln.lastEmpty.Store(laneClaiming)
		ln.confirmed.Store(laneClaiming)
	}
	c.limits.jobBudget = newJobBudget(maxJobs, false)
}

// take reserves up to n claims from the budget and returns how many.
func (l *jobBudget) take(n int) int {
	for {
		b := l.budget.Load()
		if b < 0 {
			return n
		}
		got := min(int64(n), b)
		if l.budget.CompareAndSwap(b, b-got) {
			return int(got)
		}
	}
}

// giveBack returns reserved claims a round did not use.
func (l *jobBudget) giveBack(n int) {
	if n > 0 && l.budget.Load() >= 0 {
		l.budget.Add(int64(n))
	}
}

func (l *jobBudget) spent() bool { return l.max > 0 && l.claimed.Load() >= l.max }

// laneIdle values: a lane in a claim round, or one whose budget is spent.
const (
	laneClaiming = -1
	laneSpent    = -2
)

// noteFinished counts a job leaving the worker; called before it leaves
// running or settling, so Drained never sees it gone with the old count.
func (c *claimer) noteFinished() { c.limits.finished.Add(1) }

// beginRound reserves up to n claims for a round of l and returns how
// many, with the finish count the round starts after. 0 claims: spent
// means the MaxJobs budget is used up (claim no more); otherwise another
// lane holds what is left of it for its round, and this lane waits, idle:
// that round sees every row this one would.
func (c *claimer) beginRound(l *lane, n int) (want int, gen int64, spent bool) {
	gen = c.limits.finished.Load()
	if want = c.limits.take(n); want > 0 {
		l.idleAfter.Store(laneClaiming)
		return want, gen, false
	}
	if c.limits.spent() {
		l.idleAfter.Store(laneSpent)
		return 0, gen, true
	}
	if c.limits.shared {
		// The rest is held by a round of another site's worker, which
		// reads other tables: this lane has not looked, so it is not idle.
		l.idleAfter.Store(laneClaiming)
		return 0, gen, false
	}
	l.idleAfter.Store(gen)
	l.confirmed.Store(gen) // the other lane's rounds look for it
	return 0, gen, false
}

// giveBack settles the budget of a round that reserved n claims and took
// got.
func (c *claimer) giveBack(n, got int) {
	c.limits.giveBack(n - got)
	if got > 0 && c.limits.max > 0 && c.limits.claimed.Add(int64(got)) >= c.limits.max {
		c.kick() // idle lanes see the spent budget now, not a poll later
	}
}

// endRound records a round of l begun after gen that took got: an empty
// round marks the lane idle as of gen. A round that took nothing because
// rows waited for their PHP class's settings (deferred) is not empty:
// those rows are due and this worker can run them once the settings are
// read, so `flush` and --stop-when-empty must not stop there. Rows whose
// settings cannot be read because PHP cannot run (ErrPHPDown) are not
// deferred in that sense: nothing this worker does would take them.
func (c *claimer) endRound(l *lane, gen int64, got int, deferred bool, err error) {
	switch {
	case err != nil:
	case got == 0 && !deferred:
		// A claim skips rows another transaction holds locked for a
		// moment (SKIP LOCKED: a sweep's scan, a claim elsewhere), so one
		// empty round does not prove the queue empty: a second one in a
		// row, with no job finished between, does (Drained asks for it).
		if l.lastEmpty.Load() == gen {
			l.confirmed.Store(gen)
		}
		l.lastEmpty.Store(gen)
		l.idleAfter.Store(gen)
	default:
		l.lastEmpty.Store(laneClaiming)
		l.confirmed.Store(laneClaiming)
	}
}

// Drained reports that the worker has nothing running and that every lane's
// last two claim rounds, begun after the last job finished, found nothing to
// claim (or the MaxJobs budget is spent): what `work --stop-when-empty`
// and `flush` wait for. Delayed rows (a retry's backoff) are not due, so
// they do not count, as in the plugin's flush; nor do rows waiting for the
// settings of a PHP class while PHP cannot run (PHPDown says so).
func (w *Worker) Drained() bool {
	return w.jobs.busy() == 0 && w.claim.drained()
}

// PHPDown is why the worker's PHP cannot run (an error that is
// ErrPHPDown) while a lane's last claim round left due rows pending for
// it; nil otherwise. A drain that ends then has not run those rows.
func (w *Worker) PHPDown() error {
	for _, l := range w.claim.lanes {
		if err := l.phpDown.Load(); err != nil {
			return *err
		}
	}
	return nil
}

// notePHPDown records what l's round just found of PHP (down: ErrPHPDown,
// or nil), logging when it changes.
func (c *claimer) notePHPDown(l *lane, down error) {
	var next *error
	if down != nil {
		next = &down
	}
	switch prev := l.phpDown.Swap(next); {
	case prev == nil && down != nil:
		if c.phpDownLanes.Add(1) == 1 {
			c.Log.Warn("PHP cannot run: the jobs waiting for a PHP class's settings stay pending (a drain does not wait for them) until it runs again", "err", down)
		}
	case prev != nil && down == nil:
		if c.phpDownLanes.Add(-1) == 0 {
			c.Log.Info("PHP runs again: the jobs that waited for it are claimed")
		}
	}
}

// drained reports that every lane's last two claim rounds, begun after the
// last job finished, found nothing to claim (or the budget is spent); when
// a lane has looked only once, it has them look again now.
func (c *claimer) drained() bool {
	gen := c.limits.finished.Load()
	confirm := false
	for _, l := range c.lanes {
		v := l.idleAfter.Load()
		switch {
		case v == laneSpent:
		case v != gen:
			return false
		case l.confirmed.Load() != gen:
			confirm = true
		}
	}
	if confirm {
		// Every lane found nothing once: have them look again now rather
		// than after their poll interval.
		c.kick()
		return false
	}
	return true
}

// BudgetSpent reports that the worker has taken its Config.MaxJobs jobs
// and none of them is still running. A claim counts once its round has
// started its jobs, so a committed claim is never missed.
func (w *Worker) BudgetSpent() bool {
	return w.claim.limits.spent() && w.jobs.busy() == 0
}
