package queuety

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// settleFor is how long after the server's write counters last moved the
// gate keeps looking (and at least the poll after the one that saw them
// move). A row is counted when it is written and a COMMIT when it is sent,
// both before the transaction is visible: the look that the move opened
// can run just before the commit lands, and the next ones see it.
const settleFor = 50 * time.Millisecond

// lookGate decides, each poll of a server's look loop, whether the full
// batched look runs. The look reads every site's jobs table and costs the
// server in proportion to the tables (a 500-table look: about 23 ms); the
// gate first reads the server's write counters, one statement that costs
// what a status read costs. No job becomes due without a write (a
// dispatch, a release, a retry, a completion) or the time passing
// (a delay, a retry's backoff), so the full look runs only when:
//   - the counters moved since the last poll, or within settleFor;
//   - the sites or queues looked at changed (a site started, a paused
//     queue's snapshot expired);
//   - the last full look that worked began an idle interval ago, less a
//     poll: jobs due by time alone are found within the interval;
//   - the counters cannot be read: every poll, as without the gate.
//
// This daemon's own batched heartbeat (ownWrites) is taken off the
// readings: alone, it opens no look.
//
// Only the server's look loop calls it; the counts are shared.
type lookGate struct {
	read  func(ctx context.Context) (store.WriteCounters, error)
	own   *ownWrites
	poll  time.Duration // SitesConfig.LookInterval
	every time.Duration // SitesConfig.IdleLookInterval
	log   *slog.Logger
	stats *lookStats

	// off: every poll looks and nothing is read (the interval is the poll
	// interval, or the server reports no write counters).
	off bool
	// blind: the last read failed (logged once, until a read works).
	blind    bool
	have     bool                // last is a reading
	last     store.WriteCounters // less the rows of own writes
	movedAt  time.Time           // when the counters were last seen to move
	sinceMov int                 // polls since
	lookedAt time.Time           // when the last full look that worked began (zero: none)
	looked   []store.DueLook
}

func newLookGate(read func(context.Context) (store.WriteCounters, error), own *ownWrites, poll, every time.Duration, log *slog.Logger, stats *lookStats) *lookGate {
	return &lookGate{read: read, own: own, poll: poll, every: every, log: log, stats: stats, off: every <= poll}
}

// ownWrites are the writes this daemon's server loops make on a server
// (the batched registration heartbeat, every site's within a few
// seconds): begun and ended around them, and the rows they changed
// counted as each statement returns. Each changed row moved the server's
// Handler_update once; the gate takes them off its readings, so an idle
// daemon's own heartbeat does not open the look.
type ownWrites struct {
	busy atomic.Int32 // writes under way
	rows atomic.Int64 // rows changed so far
}

// begin marks an own write under way until end.
func (o *ownWrites) begin() { o.busy.Add(1) }

func (o *ownWrites) end() { o.busy.Add(-1) }

// changed counts rows an own write changed (its statement returned):
// before end.
func (o *ownWrites) changed(rows int64) { o.rows.Add(rows) }

// Why a poll ran the full look.
const (
	lookSkipped = iota
	lookWrites
	lookChanged
	lookInterval
	lookBlind
)

// open reports whether the poll at now runs the full look of parts.
func (g *lookGate) open(ctx context.Context, now time.Time, parts []store.DueLook) bool {
	g.stats.polls.Add(1)
	why := g.why(ctx, now, parts)
	if why != lookSkipped {
		g.stats.looks.Add(1)
		g.stats.by[why].Add(1)
	}
	return why != lookSkipped
}

func (g *lookGate) why(ctx context.Context, now time.Time, parts []store.DueLook) int {
	if g.off {
		return lookBlind
	}
	rows0, busy0 := g.own.rows.Load(), g.own.busy.Load()
	c, err := g.read(ctx)
	rows1, busy1 := g.own.rows.Load(), g.own.busy.Load()
	switch {
	case errors.Is(err, store.ErrNoWriteCounters):
		// It will not answer later either: stop asking.
		g.off = true
		g.log.Warn("sites: the database server reports no write counters; its sites are looked at every poll", "err", err)
		return lookBlind
	case err != nil:
		if !g.blind && ctx.Err() == nil {
			g.log.Warn("sites: the database server's write counters cannot be read; its sites are looked at every poll until they can", "err", err)
		}
		g.blind, g.have = true, false
		return lookBlind
	}
	if g.blind {
		g.blind = false
		g.log.Info("sites: the database server's write counters answer again; an idle poll skips the look")
	}
	// With no own write under way or returned across the reading, the
	// reading holds exactly the rows counted so far: take them off, and
	// what is left moved only by other clients. Otherwise an own
	// statement may be in it, counted or not: compare nothing now; the
	// next reading is compared with the same last one, so a write of
	// another client meanwhile is seen then.
	if busy0 == 0 && busy1 == 0 && rows0 == rows1 {
		c.Updated -= rows1
		g.sinceMov++
		if !g.have || c != g.last {
			g.movedAt, g.sinceMov = now, 0
		}
		g.last, g.have = c, true
	}
	switch {
	case !g.have:
		return lookWrites // no reading to compare with yet
	case g.sinceMov <= 1 || now.Sub(g.movedAt) < settleFor:
		return lookWrites
	case g.lookedAt.IsZero() || !sameLook(g.looked, parts):
		return lookChanged
	// The look is due by the next poll: run it now, so no look follows
	// the last by more than the interval.
	case now.Add(g.poll).Sub(g.lookedAt) > g.every:
		return lookInterval
	}
	return lookSkipped
}

// done records a full look that began at now: one that worked answers for
// the interval; after one that failed, the next poll looks again.
func (g *lookGate) done(now time.Time, parts []store.DueLook, ok bool) {
	if !ok {
		g.lookedAt, g.looked = time.Time{}, nil
		return
	}
	g.lookedAt, g.looked = now, parts
}

// sameLook reports whether two looks ask the same tables of the same
// workers about the same queues.
func sameLook(a, b []store.DueLook) bool {
	return slices.EqualFunc(a, b, func(x, y store.DueLook) bool {
		return x.Store == y.Store && x.Database == y.Database && slices.Equal(x.Queues, y.Queues)
	})
}

// lookStats are the counts behind Sites.Looks, over every server.
type lookStats struct {
	polls, looks atomic.Int64
	by           [lookBlind + 1]atomic.Int64
}

// SitesLooks counts the polls of a Sites' batched looks and the full
// looks they ran, by what opened them (Sites.Looks). A poll of an idle
// server reads its write counters and runs no full look.
type SitesLooks struct {
	// Polls: one every LookInterval, each database server.
	Polls int64 `json:"polls"`
	// Looks: the polls that ran the full look, each for one of these.
	Looks int64 `json:"looks"`
	// Writes: the server's write counters moved (a client wrote rows
	// or committed; this daemon's own claims and heartbeats too).
	Writes int64 `json:"writes"`
	// Changed: the sites or queues looked at changed.
	Changed int64 `json:"changed"`
	// Interval: IdleLookInterval passed since the last full look.
	Interval int64 `json:"interval"`
	// Blind: the counters could not be read, the server has none, or
	// IdleLookInterval is LookInterval (every poll looks).
	Blind int64 `json:"blind"`
}

// Looks counts the polls of the batched looks since NewSites and the full
// looks they ran.
func (s *Sites) Looks() SitesLooks {
	st := &s.looks
	return SitesLooks{Polls: st.polls.Load(), Looks: st.looks.Load(), Writes: st.by[lookWrites].Load(),
		Changed: st.by[lookChanged].Load(), Interval: st.by[lookInterval].Load(), Blind: st.by[lookBlind].Load()}
}
