package queuety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// claimTimeout bounds one claim round's statements and commit.
const claimTimeout = 30 * time.Second

// round runs one claim: lock up to n jobs from the queues in strict
// order (paused ones skipped), write them processing with their `started`
// log rows and commit, then start their handlers. It returns how many jobs
// it claimed, and whether it left due rows waiting for their PHP class's
// settings (being read from the pool: the next round takes them).
//
// The handlers start only after the commit. A claim the server rolls back
// (a deadlock victim against PHP's claim, a lost connection) has then run
// nothing, and its rows, pending again, are run once by whoever claims them
// next. Keeping the transaction open while quick jobs ran would save a row
// write per job, but a rollback after a handler ran is that handler run
// twice, which a mixed fleet hits every few seconds.
//
// unread are the PHP classes whose rows the round deferred because their
// settings were not read yet.
func (c *claimer) round(ctx context.Context, l *lane, n int) (claimed int, unread []string, err error) {
	// Not ctx's end: cancelling a claim mid-COMMIT would leave its rows in
	// doubt; Stop waits for the round instead, and proceed below hands the
	// rows back when it came.
	lanes := ctx
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	if skip, err := c.sharedIdleLook(l); skip || err != nil {
		return 0, nil, err
	}
	paused := c.paused.get(ctx)
	// An idle lane looks first: an idle poll is then one short read, not a
	// claim transaction. QUEUETY_DEBUG keeps the plugin's rows of every
	// poll ("Attempting to claim…"), which only the claim writes.
	if l.idle && !c.Config.Debug {
		due, err := c.Store.AnyDue(ctx, openQueues(c.Config.Queues, paused))
		if err != nil {
			return 0, nil, err
		}
		if !due {
			c.Stats.idleLooks.Add(1)
			return 0, nil, nil
		}
	}
	if c.slots != nil {
		// The rows' slots come from the budget over every site too; the
		// wait for them holds no connection. A round claims at most what
		// it was given; what it does not claim goes back at once.
		got, err := c.slots.Acquire(lanes, n)
		if err != nil {
			return 0, nil, nil // stopping
		}
		defer func() { c.slots.Release(got - claimed) }()
		n = got
		// The wait may have been long: the claim gets its own time, and
		// the paused queues as they are now.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(lanes), claimTimeout)
		defer cancel()
		paused = c.paused.get(ctx)
	}
	c.Stats.claimRounds.Add(1)
	start := time.Now()
	rows, err := claimWindow(ctx, c.Store, c.WorkerID, c.Log, func(ctx context.Context, tx *store.ClaimTx) ([]store.JobRow, []store.LogRow, error) {
		g := c.admit.newGroupAdmission()
		rows, err := c.selectClaim(ctx, tx, g, paused, n)
		if err != nil {
			return nil, nil, err
		}
		// The last attempt's answer: claimWindow may run this again.
		unread = unread[:0]
		for class := range g.unread {
			unread = append(unread, class)
		}
		return rows, c.admit.claimLogs(g, rows), nil
	}, func() bool { return lanes.Err() == nil })
	if err != nil {
		return 0, nil, err
	}
	if len(rows) == 0 {
		return 0, unread, nil
	}
	c.Observer.observeClaim(start, len(rows))
	c.Observer.observeClaimed(rows)
	c.Starter.startJobs(l, rows)
	c.Stats.claimed.Add(int64(len(rows)))
	return len(rows), unread, nil
}

// readUnread waits for the settings of classes whose rows a claim
// deferred, outside any transaction, so the next round admits them. A
// read that fails is logged; the rows stay pending and the next round
// asks again. It returns the fallback's ErrPHPDown error when PHP cannot
// run at all: every class would fail the same way, and the caller counts
// the round as empty for Drained rather than waiting here.
func (c *claimer) readUnread(ctx context.Context, classes []string) (down error) {
	src := c.Reg.classMetadata()
	if src == nil {
		return nil
	}
	r, ok := src.(workflow.MetadataReader)
	if !ok {
		c.sleep(ctx, min(c.Config.PollInterval, 100*time.Millisecond))
		return nil
	}
	for _, class := range classes {
		_, err := r.ClassMetadata(ctx, class)
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, ErrPHPDown):
			return err
		default:
			c.Log.Warn("could not read a PHP class's settings; its jobs wait", "class", class, "err", err)
			c.sleep(ctx, c.Config.PollInterval)
		}
	}
	return nil
}

// claimWindow is one claim transaction, the in-process worker's
// (claimer.round) and an external worker's (Tasks.Poll): it begins the
// claim, locks the rows pick selects, and commits them processing under
// owner with their log rows (`started` ones with the attempt the claim
// spends, claimedAttempt). When pick took nothing it commits only its log
// rows (QUEUETY_DEBUG's), or ends the claim; when proceed says no (Stop
// arrived while claiming) every selected row goes back untouched, attempts
// unspent (rows the session claim buried stay buried). It returns the
// rows as read before the claim: their Attempts do not count it yet.
func claimWindow(ctx context.Context, st *store.Store, owner string, log *slog.Logger,
	pick func(ctx context.Context, tx *store.ClaimTx) ([]store.JobRow, []store.LogRow, error), proceed func() bool) ([]store.JobRow, error) {
	tx, err := st.BeginClaim(ctx)
	if err != nil {
		return nil, err
	}
	rows, logs, err := pick(ctx, tx)
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	switch {
	case !proceed():
		return nil, tx.End(ctx, owner)
	case len(rows) == 0 && len(logs) > 0:
		// The rows deferred stay untouched.
		return nil, tx.Commit(ctx, store.ClaimCommit{WorkerID: owner, Logs: logs})
	case len(rows) == 0:
		return nil, tx.End(ctx, owner)
	}
	commit := store.ClaimCommit{WorkerID: owner, Running: make([]int64, len(rows)), Logs: logs}
	for i := range rows {
		commit.Running[i] = rows[i].ID
	}
	if err := tx.Commit(ctx, commit); err != nil {
		if errors.Is(err, store.ErrCommitUnknown) {
			return settleClaim(ctx, st, owner, rows, err, log)
		}
		return nil, err
	}
	return rows, nil
}

// settleBudget bounds how long a claim whose COMMIT went unanswered is
// read back before its rows are left to the stale sweep: long enough for
// a cluster to evict a dead node and elect a primary (seconds), or a
// proxy to switch to a promoted replica.
const settleBudget = 2 * time.Minute

// settleClaim reads back, on new connections until the server answers, which
// rows of a claim whose COMMIT went unanswered it holds (see
// store.SettleClaim), and returns them to be run: the claim committed them,
// so running them once is right. A row the claim does not hold is left
// alone. Without an answer within settleBudget the rows are left to the
// stale sweep, as before: late, never doubled.
func settleClaim(ctx context.Context, st *store.Store, owner string, rows []store.JobRow, cause error, log *slog.Logger) ([]store.JobRow, error) {
	// Not ctx's end: the claim is in doubt until read back.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleBudget)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		one, cancelOne := context.WithTimeout(ctx, 10*time.Second)
		held, err := st.SettleClaim(one, owner, rows)
		cancelOne()
		if err == nil {
			log.Info("claim commit went unanswered; read back the rows it holds",
				"claimed", len(rows), "held", len(held), "cause", cause)
			if len(held) == 0 {
				return nil, cause
			}
			return held, nil
		}
		select {
		case <-ctx.Done():
			log.Warn("claim commit went unanswered and could not be read back; the stale sweep will recover its rows",
				"claimed", len(rows), "cause", cause, "err", err)
			return nil, cause
		case <-time.After(delay + rand.N(delay/2)):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

// claimedAttempt is the attempt a claim of row spends: the row read before
// the claim shows the attempts before it, and the claim increments them,
// as Queue::claim does (a TINYINT: at most 255).
func claimedAttempt(row *store.JobRow) int { return min(row.Attempts+1, 255) }

// startedLog is a claimed plain job's `started` row.
func startedLog(r *store.JobRow) store.LogRow {
	started := store.LogFor(r, store.EventStarted)
	started.Attempt = store.Int(int64(claimedAttempt(r)))
	return started
}

// openQueues are queues less the paused ones, in order.
func openQueues(queues []string, paused map[string]bool) []string {
	var open []string
	for _, q := range queues {
		if !paused[q] {
			open = append(open, q)
		}
	}
	return open
}

// selectClaim locks the rows one claim takes: session-bound jobs first
// (ordinary jobs never take them, and a busy queue of plain jobs must not
// starve them; they are admitted by their session, not by concurrency
// groups), then each open queue in order, less the jobs of saturated
// concurrency groups.
func (c *claimer) selectClaim(ctx context.Context, tx *store.ClaimTx, g *groupAdmission, paused map[string]bool, n int) ([]store.JobRow, error) {
	claimable := c.Claimable
	c.PHPOnly(&claimable) // batches and chain catches without a pool (machine_claim.go)
	c.slice.apply(ctx, time.Now(), &claimable)
	open := openQueues(c.Config.Queues, paused)
	rows, err := c.Sessions.claim(ctx, tx, open, claimable, n)
	if err != nil {
		return nil, fmt.Errorf("worker sessions: %w", err)
	}
	for _, q := range open {
		g.debugf(q, "Attempting to claim job from queue.")
		// A queue is read again while its rows included jobs of groups found
		// saturated: the next read leaves those groups out, so a full group
		// at the head of a queue does not keep the jobs behind it waiting
		// while slots are free.
		for round := 0; len(rows) < n && round < maxGroupRereads; round++ {
			p := claimable
			p.Queue, p.Limit, p.SkipGroups = q, n-len(rows), g.saturatedList()
			if limited := g.limitedList(); len(limited) > 0 {
				p.SkipHandlers = append(slices.Clip(claimable.SkipHandlers), limited...)
			}
			if round > 0 {
				// The claim's own row locks do not hide the rows it took or
				// deferred from a second read.
				p.SkipIDs = g.seen
			}
			got, err := tx.Select(ctx, p)
			if err != nil {
				return nil, fmt.Errorf("queue %s: %w", q, err)
			}
			if round == 0 && len(got) == 0 {
				g.debugf(q, "No job claimed, queue is empty.")
			}
			admitted, deferred, err := c.admit.admit(ctx, tx, g, got)
			if err != nil {
				return nil, err
			}
			rows = append(rows, admitted...)
			if deferred == 0 || len(got) < p.Limit || g.waiting[q] {
				break
			}
		}
		if len(rows) >= n {
			break
		}
	}
	return rows, nil
}

// ClaimMetrics are a worker's claim counters in its registration's
// process_metrics.
type ClaimMetrics struct {
	Rounds     int64 `json:"claim_rounds"`
	RolledBack int64 `json:"claim_rollbacks"`
}

// ClaimRollbacks adds up the claim counters the live (not stale) workers
// of namespace ("" = default) published with their heartbeats.
func (c *Client) ClaimRollbacks(ctx context.Context, namespace string) (ClaimMetrics, error) {
	ws, err := c.Workers(ctx, namespace)
	if err != nil {
		return ClaimMetrics{}, err
	}
	var sum ClaimMetrics
	for _, w := range ws {
		var m ClaimMetrics
		if w.IsStale || len(w.ProcessMetrics) == 0 || json.Unmarshal(w.ProcessMetrics, &m) != nil {
			continue
		}
		sum.Rounds += m.Rounds
		sum.RolledBack += m.RolledBack
	}
	return sum, nil
}
