package queuety

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// pausedCache is the claim lanes' view of the paused queues: the last read,
// loaded without a lock by readers that must not wait on the database (the
// chain check runs inside a step's transaction); mu serializes reads.
type pausedCache struct {
	store  *store.Store
	log    *slog.Logger
	queues []string // the worker's: a newly paused one is logged as the plugin does
	ttl    time.Duration

	mu   sync.Mutex
	snap atomic.Pointer[pausedSnapshot]
}

type pausedSnapshot struct {
	set map[string]bool
	at  time.Time
}

func newPausedCache(st *store.Store, log *slog.Logger, queues []string, ttl time.Duration) *pausedCache {
	return &pausedCache{store: st, log: log, queues: queues, ttl: ttl}
}

// get returns the paused queues, read again once the last read is a TTL
// (Config.PauseCacheTTL) old.
func (p *pausedCache) get(ctx context.Context) map[string]bool {
	return p.read(ctx, p.ttl)
}

// read returns the paused queues, read again when the last read is
// maxAge old or older.
func (p *pausedCache) read(ctx context.Context, maxAge time.Duration) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.snap.Load()
	if last != nil && time.Since(last.at) < maxAge {
		return last.set
	}
	// The read shows the table as of its start: that is the snapshot's age.
	readAt := time.Now()
	qs, err := p.store.PausedQueues(ctx)
	if err != nil {
		p.log.Warn("reading paused queues failed; using the last known state", "err", err)
		if last == nil {
			return map[string]bool{}
		}
		return last.set
	}
	m := pausedSet(qs)
	p.snap.Store(&pausedSnapshot{set: m, at: readAt})
	var before map[string]bool
	if last != nil {
		before = last.set
	}
	p.logNewlyPaused(ctx, before, m)
	return m
}

// logNewlyPaused writes the plugin's row for a paused queue this worker
// serves (Worker::run: handler _worker, event started, "Queue 'q' is
// paused, skipping.") once each time the worker finds the queue paused
// after it was not: the plugin writes it on every poll of the queue, once a
// second or so, and a Go worker reads the queue states far more often, so
// a row per read would flood the logs table while the signal stays the
// same.
func (p *pausedCache) logNewlyPaused(ctx context.Context, before, now map[string]bool) {
	var rows []store.LogRow
	for _, q := range p.queues {
		if now[q] && !before[q] {
			rows = append(rows, workerRow(q, store.EventStarted, fmt.Sprintf("Queue '%s' is paused, skipping.", q)))
		}
	}
	if len(rows) == 0 {
		return
	}
	if err := p.store.InsertLogs(ctx, rows); err != nil {
		p.log.Warn("logging a paused queue failed", "err", err)
	}
}

// olderThan reports whether the snapshot is missing or at least d old.
func (p *pausedCache) olderThan(d time.Duration) bool {
	snap := p.snap.Load()
	return snap == nil || time.Since(snap.at) >= d
}

// known reports whether queue is paused as of the last read, and whether
// that read is recent enough (the TTL) for a claim to trust it; it never
// touches the database.
func (p *pausedCache) known(queue string) (paused, known bool) {
	snap := p.snap.Load()
	if snap == nil || time.Since(snap.at) >= p.ttl {
		return false, false
	}
	return snap.set[queue], true
}

// open are the queues less the paused ones while the snapshot is younger
// than fresh; all of them past that.
func (p *pausedCache) open(queues []string, fresh time.Duration) []string {
	snap := p.snap.Load()
	if snap == nil || time.Since(snap.at) > fresh {
		return queues
	}
	return openQueues(queues, snap.set)
}

// pausedSet is the set of the paused queues qs.
func pausedSet(qs []string) map[string]bool {
	m := make(map[string]bool, len(qs))
	for _, q := range qs {
		m[q] = true
	}
	return m
}
