package queuety

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
