package queuety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// claimLoop fills free slots with claimed jobs until Stop.
// lane is one claimer with its share of the slots.
type lane struct {
	size      int
	inflight  int // guarded by Worker.mu
	slotFreed chan struct{}
	kick      chan struct{} // new work this process made: claim now, not after the poll interval
	idleAfter atomic.Int64  // worker_limits.go: the finish count its last empty round began after
	// lastEmpty and confirmed (worker_limits.go): the finish count of the
	// lane's last empty round, and of the second empty round in a row.
	lastEmpty, confirmed atomic.Int64
	// idle: the lane's last round claimed nothing, so the next one looks
	// before it claims (claimRound). Only the lane's claimLoop touches it.
	idle bool
}

func (w *Worker) claimLoop(l *lane) {
	defer w.claimersWG.Done()
	errDelay := 100 * time.Millisecond
	for w.claimCtx.Err() == nil {
		free := w.freeSlots(l)
		if free == 0 {
			select {
			case <-l.slotFreed:
			case <-w.claimCtx.Done():
			}
			continue
		}
		want, gen, spent := w.beginRound(l, min(free, w.cfg.MaxClaimBatch))
		switch {
		case spent: // the MaxJobs budget is used up: claim no more
			<-w.claimCtx.Done()
			continue
		case want == 0: // another lane's round holds the rest of the budget
			w.idle(l, w.cfg.PollInterval)
			continue
		}
		n, unread, err := w.claimRound(l, want)
		l.idle = err == nil && n == 0 && len(unread) == 0
		w.endRound(l, gen, want, n, len(unread) > 0, err)
		if store.ConnectionLost(err) {
			w.dbTroubleAt.Store(time.Now().UnixNano())
		}
		if err != nil && store.Transient(err) {
			// A deadlock or lock wait rolled the claim back (nothing ran):
			// expected now and then under contention, so just try again.
			w.claimRolledBack(err)
			w.sleep(rand.N(20 * time.Millisecond))
			continue
		}
		if err != nil {
			w.log.Warn("claim failed; backing off", "err", err, "in", errDelay)
			w.sleep(errDelay + rand.N(errDelay/2))
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 100 * time.Millisecond
		if len(unread) > 0 {
			// Rows waited for their PHP classes' settings: read them now,
			// then claim again at once (a cron drain must not take the
			// wait for an empty queue).
			w.readUnread(unread)
			continue
		}
		if n == 0 {
			jitter := time.Duration(float64(w.cfg.PollInterval) * (0.8 + 0.4*rand.Float64()))
			w.idle(l, jitter)
		}
	}
}

// idle waits for the poll interval, or less when this process made new
// work (a workflow step enqueued the next one, a wait woke a parent).
func (w *Worker) idle(l *lane, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.kick:
	case <-w.claimCtx.Done():
	}
}

// kickLanes ends the idle wait of every lane.
func (w *Worker) kickLanes() {
	for _, l := range w.lanes {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (w *Worker) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.claimCtx.Done():
	}
}

func (w *Worker) freeSlots(l *lane) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return l.size - l.inflight
}

// claimRound runs one claim: lock up to n jobs from the queues in strict
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
func (w *Worker) claimRound(l *lane, n int) (claimed int, unread []string, err error) {
	// Not claimCtx: cancelling a claim mid-COMMIT would leave its rows in
	// doubt; Stop waits for the round instead.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if skip, err := w.sharedIdleLook(l); skip || err != nil {
		return 0, nil, err
	}
	paused := w.pausedQueues(ctx)
	// An idle lane looks first: an idle poll is then one short read, not a
	// claim transaction. QUEUETY_DEBUG keeps the plugin's rows of every
	// poll ("Attempting to claim…"), which only the claim writes.
	if l.idle && !w.cfg.Debug {
		due, err := w.store.AnyDue(ctx, openQueues(w.cfg.Queues, paused))
		if err != nil {
			return 0, nil, err
		}
		if !due {
			w.stats.idleLooks.Add(1)
			return 0, nil, nil
		}
	}
	w.stats.claimRounds.Add(1)
	start := time.Now()
	rows, err := claimWindow(ctx, w.store, w.id, w.log, func(ctx context.Context, tx *store.ClaimTx) ([]store.JobRow, []store.LogRow, error) {
		g := w.newGroupAdmission()
		rows, err := w.selectClaim(ctx, tx, g, paused, n)
		if err != nil {
			return nil, nil, err
		}
		// The last attempt's answer: claimWindow may run this again.
		unread = unread[:0]
		for class := range g.unread {
			unread = append(unread, class)
		}
		return rows, w.claimLogs(g, rows), nil
	}, func() bool { return w.claimCtx.Err() == nil })
	if err != nil {
		return 0, nil, err
	}
	if len(rows) == 0 {
		return 0, unread, nil
	}
	w.observeClaim(start, len(rows))
	w.observeClaimed(rows)
	w.startJobs(l, rows)
	return len(rows), unread, nil
}

// readUnread waits for the settings of classes whose rows a claim
// deferred, outside any transaction, so the next round admits them. A
// read that fails is logged by the pool; the rows stay pending and the
// next round asks again.
func (w *Worker) readUnread(classes []string) {
	src := w.reg.classMetadata()
	if src == nil {
		return
	}
	r, ok := src.(workflow.MetadataReader)
	if !ok {
		w.sleep(min(w.cfg.PollInterval, 100*time.Millisecond))
		return
	}
	for _, class := range classes {
		if _, err := r.ClassMetadata(w.claimCtx, class); err != nil && w.claimCtx.Err() == nil {
			w.log.Warn("could not read a PHP class's settings; its jobs wait", "class", class, "err", err)
			w.sleep(w.cfg.PollInterval)
		}
	}
}

// claimWindow is one claim transaction, the in-process worker's
// (claimRound) and an external worker's (Tasks.Poll): it begins the
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
			return settleClaim(st, owner, rows, err, log)
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
func settleClaim(st *store.Store, owner string, rows []store.JobRow, cause error, log *slog.Logger) ([]store.JobRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), settleBudget)
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
func (w *Worker) selectClaim(ctx context.Context, tx *store.ClaimTx, g *groupAdmission, paused map[string]bool, n int) ([]store.JobRow, error) {
	claimable := store.ClaimParams{Handlers: w.handlers, WorkflowHandlers: w.wfHandlers,
		AllWorkflowSteps: w.engine != nil && w.engine.StepRunner() != nil}
	w.phpOnlyClaims(&claimable) // batches and chain catches without a pool (machine_claim.go)
	w.slice.apply(ctx, time.Now(), &claimable)
	open := openQueues(w.cfg.Queues, paused)
	rows, err := w.sessions.claim(ctx, tx, open, claimable, n)
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
			admitted, deferred, err := w.admit(ctx, tx, g, got)
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

// startJobs runs the jobs of a committed claim, each in its own goroutine.
func (w *Worker) startJobs(l *lane, rows []store.JobRow) {
	now := time.Now()
	w.mu.Lock()
	l.inflight += len(rows)
	for i := range rows {
		rj, ctx := w.newRunning(rows[i], l, now, claimedAttempt(&rows[i]))
		rj.sessionLease = sessionLease(&rows[i])
		w.running[rj.row.ID] = rj
		w.execWG.Add(1)
		go w.execute(ctx, rj)
	}
	w.mu.Unlock()
	w.stats.claimed.Add(int64(len(rows)))
}

// newRunning is the in-flight entry of attempt of row, in a slot of l,
// with its own context under the worker's jobs context.
func (w *Worker) newRunning(row store.JobRow, l *lane, now time.Time, attempt int) (*running, context.Context) {
	row.Attempts = attempt
	rj := &running{row: row, start: now, lane: l}
	rj.touched(now)
	ctx, cancel := context.WithCancelCause(w.jobsCtx)
	rj.cancel = cancel
	rj.job = &Job{
		ID: row.ID, Queue: row.Queue, Handler: row.Handler, Priority: Priority(row.Priority),
		Attempt: attempt, MaxAttempts: row.MaxAttempts, RawPayload: []byte(row.Payload),
		attempt: store.Attempt{ID: row.ID, Attempt: attempt, WorkerID: w.id},
		w:       w, run: rj,
	}
	return rj, ctx
}

// release frees the job's slot.
func (w *Worker) release(rj *running) {
	w.noteFinished() // before it leaves running: see Drained
	w.mu.Lock()
	delete(w.running, rj.row.ID)
	w.mu.Unlock()
	rj.cancel(nil)
	w.releaseSlot(rj.lane)
}

// releaseSlot frees a slot of l whose job is no longer running.
func (w *Worker) releaseSlot(l *lane) {
	w.mu.Lock()
	l.inflight--
	w.mu.Unlock()
	select {
	case l.slotFreed <- struct{}{}:
	default:
	}
}

// claimRolledBack counts a claim the server rolled back and says so at
// INFO when it is more than occasional: at least 20 since the last such
// line, and more than 1 in 100 of the claim rounds since then (a cluster
// whose writers claim the same rows, a concurrency group every claim
// fights for). Fewer stay at debug level.
func (w *Worker) claimRolledBack(err error) {
	n := w.stats.claimRollbacks.Add(1)
	w.observeClaimRollback()
	rounds := w.stats.claimRounds.Load()
	r := &w.rollbackLog
	r.mu.Lock()
	since, roundsSince := n-r.rollbacks, rounds-r.rounds
	loud := since >= 20 && since*100 > roundsSince
	if loud {
		r.rollbacks, r.rounds = n, rounds
	}
	r.mu.Unlock()
	if loud {
		w.log.Info("claims rolled back by the server (deadlocks, lock waits, cluster certification failures)",
			"rolled_back", since, "of_claim_rounds", roundsSince, "total_rolled_back", n, "last", err)
		return
	}
	w.log.Debug("claim rolled back by the server; retrying", "err", err)
}

// claimMetrics is the process_metrics the worker's registration carries
// (its heartbeat writes them): its claim rounds and how many the server
// rolled back, which `queuety status` adds up over the live workers.
func (w *Worker) claimMetrics() []byte {
	b, _ := json.Marshal(ClaimMetrics{Rounds: w.stats.claimRounds.Load(), RolledBack: w.stats.claimRollbacks.Load()})
	return b
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
