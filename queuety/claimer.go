package queuety

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/queuety/internal/fairshare"
	store "github.com/queuety-go/queuety/sql"
)

// claimer is the claim side of a worker: claim lanes that each take as many
// rows per round as they have free slots, commit the claim, and hand the
// rows to the runner (jobStarter). It owns the lanes, the MaxJobs budget
// (worker_limits.go), the paused-queue cache, the cluster slice and the
// claim counters' log. It is a service: Start runs the lanes, Stop ends
// them after the round under way (a round is never cut mid-COMMIT).
type claimer struct {
	claimerParams
	admit  *admitter
	lanes  []*lane
	paused *pausedCache
	slice  *claimSlice // the cluster node's slice of the backlog (claim_slice.go)
	limits workerLimits
	// troubleAt is when a claim last failed on the connection (unix
	// nanos); the rescuer holds off after it (see rescuer.sweep).
	troubleAt atomic.Int64
	// state is claimerIdle before Start, then claimerClaiming, then
	// claimerStopped.
	state atomic.Int32
	// refresh asks the paused-cache refresher for a read (refreshPausedSoon).
	refresh chan struct{}
	// sharedLook, set by Sites before Start, answers an idle lane's look
	// from the batched look of its server (sites_look.go).
	sharedLook sharedLook
	// slots, set by Sites before Start (shareSlots), is the worker's part
	// of a budget of slots over every site (SitesConfig.MaxSlots); nil:
	// no budget but its own Concurrency.
	slots *fairshare.Member
	// phpDownLanes counts the lanes whose phpDown is set: the worker logs
	// when the first goes down and when the last comes back.
	phpDownLanes atomic.Int32
	// rollbackLog is where the last INFO line about rolled-back claims
	// left off (rolledBack).
	rollbackLog struct {
		mu                sync.Mutex
		rollbacks, rounds int64
	}

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// claimerParams are what the claim side reads and whom it hands rows to.
type claimerParams struct {
	Config   Config
	Store    *store.Store
	Reg      *Registry // the PHP classes' settings a claim waits for
	Log      *slog.Logger
	WorkerID string
	// Clock ticks the lanes' waits. The worker gives the wall clock: the
	// poll interval is a wait for the database, which a fake application
	// clock (schedules' tests) must not hold up.
	Clock clock.Clock
	// Claimable is what the worker claims (handlers, workflow steps).
	Claimable store.ClaimParams
	// PHPOnly adds what only PHP can run to a claim's filter
	// (machine_claim.go).
	PHPOnly  func(p *store.ClaimParams)
	Sessions sessionClaimer
	Admit    *admitter
	Starter  jobStarter
	Observer claimObserver
	Stats    *workerCounters
}

// jobStarter runs the rows of a committed claim in slots of l (the
// runner, runner.go).
type jobStarter interface {
	startJobs(l *lane, rows []store.JobRow)
}

// sessionClaimer admits session-bound jobs into a claim (the session
// agent).
type sessionClaimer interface {
	claim(ctx context.Context, tx *store.ClaimTx, queues []string, p store.ClaimParams, n int) ([]store.JobRow, error)
}

// claimObserver is told about claim rounds (observer.go).
type claimObserver interface {
	observeClaim(start time.Time, jobs int)
	observeClaimed(rows []store.JobRow)
	observeClaimRollback()
}

const (
	claimerIdle int32 = iota
	claimerClaiming
	claimerStopped
)

// lane is one claimer with its share of the slots.
type lane struct {
	size      int
	inflight  atomic.Int64 // slots taken
	slotFreed chan struct{}
	kick      chan struct{} // new work this process made: claim now, not after the poll interval
	idleAfter atomic.Int64  // worker_limits.go: the finish count its last empty round began after
	// lastEmpty and confirmed (worker_limits.go): the finish count of the
	// lane's last empty round, and of the second empty round in a row.
	lastEmpty, confirmed atomic.Int64
	// idle: the lane's last round claimed nothing, so the next one looks
	// before it claims (round). Only the lane's loop touches it.
	idle bool
	// phpDown is why the lane's last round left rows to a PHP that cannot
	// run (ErrPHPDown), nil when it did not (Worker.PHPDown).
	phpDown atomic.Pointer[error]
	// slots is the claimer's budget over many sites (nil: none): a slot
	// taken for a claimed row is given back when the row's slot is freed.
	slots *fairshare.Member
}

// take fills n slots of l.
func (l *lane) take(n int) { l.inflight.Add(int64(n)) }

// free frees a slot of l and wakes its loop.
func (l *lane) free() {
	l.inflight.Add(-1)
	l.slots.Release(1)
	select {
	case l.slotFreed <- struct{}{}:
	default:
	}
}

func (l *lane) freeSlots() int { return l.size - int(l.inflight.Load()) }

func newClaimer(p claimerParams) *claimer {
	cfg := p.Config
	c := &claimer{claimerParams: p, admit: p.Admit, slice: newClaimSlice(p.Store, cfg),
		paused:  newPausedCache(p.Store, p.Log, cfg.Queues, cfg.PauseCacheTTL),
		refresh: make(chan struct{}, 1)}
	// Claim lanes split the slots: while one lane commits its claim,
	// another selects and runs, so the database always has work.
	nLanes := max(1, min(cfg.ClaimLanes, cfg.Concurrency))
	for i := 0; i < nLanes; i++ {
		size := cfg.Concurrency / nLanes
		if i < cfg.Concurrency%nLanes {
			size++
		}
		c.lanes = append(c.lanes, &lane{size: size, slotFreed: make(chan struct{}, 1), kick: make(chan struct{}, 1)})
	}
	c.initLimits(cfg.MaxJobs)
	return c
}

// shareSlots makes the claims take their slots from m too (a budget over
// many sites) besides the worker's own Concurrency; before Start.
func (c *claimer) shareSlots(m *fairshare.Member) {
	c.slots = m
	for _, l := range c.lanes {
		l.slots = m
	}
}

// Start runs the lanes and the paused-cache refresher until Stop; ctx
// carries values, not their life. It never fails.
func (c *claimer) Start(ctx context.Context) error {
	if !c.state.CompareAndSwap(claimerIdle, claimerClaiming) {
		return nil
	}
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, l := range c.lanes {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.loop(ctx, l)
		}()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.refresher(ctx)
	}()
	return nil
}

// Stop ends the lanes and waits for the rounds under way: their claims
// commit and their jobs start.
func (c *claimer) Stop() {
	if c.state.Swap(claimerStopped) != claimerClaiming {
		return
	}
	c.cancel()
	c.wg.Wait()
}

// claiming reports whether the lanes run: started and not stopping.
func (c *claimer) claiming() bool { return c.state.Load() == claimerClaiming }

// stopped reports whether Stop began.
func (c *claimer) stopped() bool { return c.state.Load() == claimerStopped }

// loop fills free slots of l with claimed jobs until ctx ends.
func (c *claimer) loop(ctx context.Context, l *lane) {
	errDelay := 100 * time.Millisecond
	cfg := &c.Config
	for ctx.Err() == nil {
		free := l.freeSlots()
		if free == 0 {
			select {
			case <-l.slotFreed:
			case <-ctx.Done():
			}
			continue
		}
		want, gen, spent := c.beginRound(l, min(free, cfg.MaxClaimBatch))
		switch {
		case spent: // the MaxJobs budget is used up: claim no more
			<-ctx.Done()
			continue
		case want == 0: // another lane's round holds the rest of the budget
			c.idle(ctx, l, cfg.PollInterval)
			continue
		}
		n, unread, err := c.round(ctx, l, want)
		l.idle = err == nil && n == 0 && len(unread) == 0
		c.giveBack(want, n)
		var down error
		if len(unread) > 0 {
			// Rows waited for their PHP classes' settings: read them now,
			// then claim again at once (a cron drain must not take the
			// wait for an empty queue).
			down = c.readUnread(ctx, unread)
		}
		if err == nil {
			c.notePHPDown(l, down)
		}
		// Rows that only a PHP that cannot run would take leave the
		// round empty for Drained (ErrPHPDown).
		c.endRound(l, gen, n, len(unread) > 0 && down == nil, err)
		if store.ConnectionLost(err) {
			c.troubleAt.Store(time.Now().UnixNano())
		}
		if err != nil && store.Transient(err) {
			// A deadlock or lock wait rolled the claim back (nothing ran):
			// expected now and then under contention, so just try again.
			c.rolledBack(err)
			c.sleep(ctx, rand.N(20*time.Millisecond))
			continue
		}
		if err != nil {
			c.Log.Warn("claim failed; backing off", "err", err, "in", errDelay)
			c.sleep(ctx, errDelay+rand.N(errDelay/2))
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 100 * time.Millisecond
		if len(unread) > 0 && down == nil {
			continue
		}
		if n == 0 {
			jitter := time.Duration(float64(cfg.PollInterval) * (0.8 + 0.4*rand.Float64()))
			c.idle(ctx, l, jitter)
		}
	}
}

// idle waits for the poll interval, or less when this process made new
// work (a workflow step enqueued the next one, a wait woke a parent).
func (c *claimer) idle(ctx context.Context, l *lane, d time.Duration) { c.wait(ctx, d, l.kick) }

// sleep waits d, or until ctx ends.
func (c *claimer) sleep(ctx context.Context, d time.Duration) { c.wait(ctx, d, nil) }

// wait waits d on the claimer's clock, or until kick or ctx ends it.
func (c *claimer) wait(ctx context.Context, d time.Duration, kick <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := c.Clock.NewTicker(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-kick:
	case <-ctx.Done():
	}
}

// kick ends the idle wait of every lane.
func (c *claimer) kick() {
	for _, l := range c.lanes {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// busySlots is how many slots run a job.
func (c *claimer) busySlots() (busy int) {
	for _, l := range c.lanes {
		busy += int(l.inflight.Load())
	}
	return busy
}

// refreshPausedSoon reads the paused queues in the background when the
// snapshot is half its TTL old: with every slot busy chaining, no claim
// round reads them, and a stale snapshot would stop the chains.
func (c *claimer) refreshPausedSoon() {
	if !c.paused.olderThan(c.Config.PauseCacheTTL/2) || !c.claiming() {
		return
	}
	select {
	case c.refresh <- struct{}{}:
	default: // a read is asked for already
	}
}

// refresher does the reads refreshPausedSoon asks for, one at a time.
func (c *claimer) refresher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.refresh:
			c.paused.read(ctx, c.Config.PauseCacheTTL/2)
		}
	}
}

// rolledBack counts a claim the server rolled back and says so at
// INFO when it is more than occasional: at least 20 since the last such
// line, and more than 1 in 100 of the claim rounds since then (a cluster
// whose writers claim the same rows, a concurrency group every claim
// fights for). Fewer stay at debug level.
func (c *claimer) rolledBack(err error) {
	n := c.Stats.claimRollbacks.Add(1)
	c.Observer.observeClaimRollback()
	rounds := c.Stats.claimRounds.Load()
	r := &c.rollbackLog
	r.mu.Lock()
	since, roundsSince := n-r.rollbacks, rounds-r.rounds
	loud := since >= 20 && since*100 > roundsSince
	if loud {
		r.rollbacks, r.rounds = n, rounds
	}
	r.mu.Unlock()
	if loud {
		c.Log.Info("claims rolled back by the server (deadlocks, lock waits, cluster certification failures)",
			"rolled_back", since, "of_claim_rounds", roundsSince, "total_rolled_back", n, "last", err)
		return
	}
	c.Log.Debug("claim rolled back by the server; retrying", "err", err)
}

// metrics is the process_metrics the worker's registration carries
// (its heartbeat writes them): its claim rounds and how many the server
// rolled back, which `queuety status` adds up over the live workers.
func (c *claimer) metrics() []byte {
	b, _ := json.Marshal(ClaimMetrics{Rounds: c.Stats.claimRounds.Load(), RolledBack: c.Stats.claimRollbacks.Load()})
	return b
}
