package queuety

import (
	"context"
	"time"
)

func (w *Worker) pausedQueues(ctx context.Context) map[string]bool {
	return w.readPaused(ctx, w.cfg.PauseCacheTTL)
}

// readPaused returns the paused queues, read again when the last read is
// maxAge old or older.
func (w *Worker) readPaused(ctx context.Context, maxAge time.Duration) map[string]bool {
	w.pausedMu.Lock()
	defer w.pausedMu.Unlock()
	last := w.pausedSnap.Load()
	if last != nil && time.Since(last.at) < maxAge {
		return last.set
	}
	// The read shows the table as of its start: that is the snapshot's age.
	readAt := time.Now()
	qs, err := w.store.PausedQueues(ctx)
	if err != nil {
		w.log.Warn("reading paused queues failed; using the last known state", "err", err)
		if last == nil {
			return map[string]bool{}
		}
		return last.set
	}
	m := pausedSet(qs)
	w.pausedSnap.Store(&pausedSnapshot{set: m, at: readAt})
	var before map[string]bool
	if last != nil {
		before = last.set
	}
	w.logNewlyPaused(ctx, before, m)
	return m
}

// refreshPausedSoon reads the paused queues in the background when the
// snapshot is half its TTL old: with every slot busy chaining, no claim
// round reads them, and a stale snapshot would stop the chains.
func (w *Worker) refreshPausedSoon() {
	if snap := w.pausedSnap.Load(); snap != nil && time.Since(snap.at) < w.cfg.PauseCacheTTL/2 {
		return
	}
	if w.claimCtx == nil || w.claimCtx.Err() != nil || !w.pausedRefreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer w.pausedRefreshing.Store(false)
		w.readPaused(w.claimCtx, w.cfg.PauseCacheTTL/2)
	}()
}

type pausedSnapshot struct {
	set map[string]bool
	at  time.Time
}

// pausedKnown reports whether queue is paused as of the last read, and
// whether that read is recent enough (PauseCacheTTL) for a claim to trust
// it; it never touches the database.
func (w *Worker) pausedKnown(queue string) (paused, known bool) {
	snap := w.pausedSnap.Load()
	if snap == nil || time.Since(snap.at) >= w.cfg.PauseCacheTTL {
		return false, false
	}
	return snap.set[queue], true
}

// pausedSet is the set of the paused queues qs.
func pausedSet(qs []string) map[string]bool {
	m := make(map[string]bool, len(qs))
	for _, q := range qs {
		m[q] = true
	}
	return m
}
