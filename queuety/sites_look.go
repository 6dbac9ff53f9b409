package queuety

import "time"

// pausedFreshFor is how long a site's batched look trusts its worker's
// paused-queue snapshot, in PauseCacheTTLs. The snapshot is read again only
// when the worker claims; past this age the look asks for every queue, so a
// queue resumed elsewhere is seen and the claim reads the snapshot anew.
const pausedFreshFor = 10

// sharedIdleLook answers an idle lane's look from its server's batched look
// (Sites.lookOnce) when the worker is one of many sites: skip means nothing
// is due, so no claim is opened and no statement sent. A due answer is
// taken once, and the lane claims without looking again.
func (w *Worker) sharedIdleLook(l *lane) (skip bool, err error) {
	r := w.sharedLook
	if r == nil || !l.idle || w.cfg.Debug {
		return false, nil
	}
	if e := r.lookErr.Load(); e != nil {
		// The claim would fail the same way: back off as for it.
		return true, *e
	}
	if r.due.Swap(false) {
		l.idle = false
		return false, nil
	}
	w.stats.idleLooks.Add(1)
	return true, nil
}

// lookQueues are the queues the batched look asks about for this worker:
// those it serves, less the paused ones while its snapshot is fresh.
func (w *Worker) lookQueues() []string {
	snap := w.pausedSnap.Load()
	if snap == nil || time.Since(snap.at) > pausedFreshFor*w.cfg.PauseCacheTTL {
		return w.cfg.Queues
	}
	return openQueues(w.cfg.Queues, snap.set)
}
