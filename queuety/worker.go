package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/steps"
	"github.com/queuety-go/queuety/workflow"
)

// Worker claims jobs from the Queuety tables and runs them with Go
// handlers. Start it, then Stop it; it is not restartable.
//
// Inside, claim lanes each take as many rows per round trip as they have
// free slots and commit the claim before any handler starts (see
// claimRound); each job runs in its own goroutine; a completer writes
// completions in batches (completer.go); a heartbeater keeps running jobs' reserved_at fresh, and
// finished ones' until their completion is written; and a rescuer sweeps
// stale rows on a cron schedule. The handler names are read from the
// Registry when the worker is built.
type Worker struct {
	c     *Client
	cfg   Config
	store *store.Store
	reg   *Registry
	log   *slog.Logger
	id    string
	// handlers is the claim filter; nil claims every handler (ClaimAll).
	handlers []string
	// engine runs workflow steps (Config.Workflows), claimed when their
	// handler is in wfHandlers; nil leaves workflow jobs out of the claim.
	engine     *workflow.Engine
	wfHandlers []string
	// wfServices are the wait sweeper and signal poller (Workflows only).
	wfServices *workflowServices

	mu      sync.Mutex
	running map[int64]*running
	// settling are finished attempts whose completion is not written yet:
	// out of their slot, still heartbeated, so no stale sweep takes a job
	// that ran only because its completion waits out a lost connection.
	settling map[int64]*running
	lanes    []*lane
	// dbTroubleAt is when a claim last failed on the connection (unix
	// nanos); the rescuer holds off after it (see rescuer.sweep).
	dbTroubleAt atomic.Int64

	// completions go to the completer (completer.go).
	completions   chan store.Completion
	completerStop chan struct{}
	completerDone chan struct{}

	jobsCtx     context.Context
	cancelJobs  context.CancelCauseFunc
	claimCtx    context.Context
	cancelClaim context.CancelFunc
	claimersWG  sync.WaitGroup
	execWG      sync.WaitGroup

	heartbeater *heartbeater
	sessions    *sessionAgent // registration, session admission and leases
	rescuer     *rescuer
	retention   *retention
	deadlines   *deadlineChecker // Config.Workflows: check_deadlines
	scheduler   *scheduler       // Config.ScheduleInterval: the schedules tick
	hooks       *webhookNotifier // the plugin's webhooks (webhook_events.go)

	// The paused-queue cache, shared by the lanes: the last read, loaded
	// without a lock by readers that must not wait on the database (the
	// chain check runs inside a transaction); pausedMu serializes reads.
	pausedMu   sync.Mutex
	pausedSnap atomic.Pointer[pausedSnapshot]
	// pausedRefreshing: a refresh of the snapshot for the chain is running.
	pausedRefreshing atomic.Bool

	// phpOnly is the claim filter for what only PHP can run, built once
	// (machine_claim.go).
	phpOnly     store.ClaimParams
	phpOnlyOnce sync.Once

	memKB    atomic.Int64
	memAt    time.Time
	started  atomic.Bool
	ready    atomic.Bool // started and not stopping (Ready)
	stopOnce sync.Once
	stopErr  error
	stats    workerCounters
	limits   workerLimits // Config.MaxJobs and Drained (worker_limits.go)
}

type workerCounters struct {
	claimed, completed, retried, buried, handedBack, refused, chained atomic.Int64
}

// WorkerStats are a Worker's counters since Start.
type WorkerStats struct {
	Claimed    int64 `json:"claimed"`
	Completed  int64 `json:"completed"`
	Retried    int64 `json:"retried"`
	Buried     int64 `json:"buried"`
	HandedBack int64 `json:"handed_back"`
	Refused    int64 `json:"refused"`
	// Chained counts workflow steps the worker ran right after the step
	// before them enqueued them, without a claim (workflow/chain.go); they
	// are not in Claimed.
	Chained int64 `json:"chained"`
	Running int   `json:"running"`
}

// running is one attempt in flight.
type running struct {
	job       *Job
	row       store.JobRow
	cancel    context.CancelCauseFunc
	state     atomic.Int32
	lastTouch atomic.Int64 // unix nanos of the last reserved_at refresh
	start     time.Time
	lane      *lane
	// sessionLease is the lease of the job's worker session (0: none).
	sessionLease time.Duration
	// memPeakKB is the peak memory the process that ran the job reported
	// (Job.ReportMemoryPeak; the PHP pool's), 0 when none did.
	memPeakKB atomic.Int64
}

// outcome is a finished attempt.
type outcome struct {
	err      error
	settings attemptSettings
	duration time.Duration
}

const (
	stateRunning int32 = iota
	stateDone
	stateAbandoned
)

func (r *running) touched(t time.Time) { r.lastTouch.Store(t.UnixNano()) }

// NewWorker builds a worker over the client's configuration. Every handler
// in reg is claimable; with ClaimAll, so is every other handler (and those
// are buried as not found).
func (c *Client) NewWorker(reg *Registry) (*Worker, error) {
	if reg == nil {
		reg = NewRegistry()
	}
	cfg := c.cfg
	w := &Worker{
		c: c, cfg: cfg, store: c.store, reg: reg,
		running:       map[int64]*running{},
		settling:      map[int64]*running{},
		completions:   make(chan store.Completion, cfg.Concurrency),
		completerStop: make(chan struct{}),
		completerDone: make(chan struct{}),
	}
	// Claim lanes split the slots: while one lane commits its claim,
	// another selects and runs, so the database always has work.
	nLanes := max(1, min(cfg.ClaimLanes, cfg.Concurrency))
	for i := 0; i < nLanes; i++ {
		size := cfg.Concurrency / nLanes
		if i < cfg.Concurrency%nLanes {
			size++
		}
		w.lanes = append(w.lanes, &lane{size: size, slotFreed: make(chan struct{}, 1), kick: make(chan struct{}, 1)})
	}
	w.initLimits(cfg.MaxJobs)
	w.id = cfg.WorkerID
	if w.id == "" {
		w.id = newWorkerID()
	}
	if len(w.id) > 64 {
		return nil, fmt.Errorf("worker id %q: longer than 64 characters", w.id)
	}
	w.log = cfg.Logger.With("worker", w.id)
	if cfg.Workflows {
		w.engine = workflow.NewEngine(c.store, reg.steps, steps.All()...)
		w.engine.MemoryKB = w.memKB.Load
		w.engine.StepTimeout = w.stepTimeout
		w.engine.StepBatch = cfg.WorkflowStepBatch
		w.engine.SetLocalRuntime(w.localRuntime()) // local activities run here (local_activity.go)
		w.engine.SetChainRuntime(w.chainRuntime())
		w.wfHandlers = workflowHandlers(reg)
		if r := reg.stepRunner(); r != nil {
			w.engine.SetStepRunner(r) // and every workflow step is claimed
		}
		if m := reg.classMetadata(); m != nil {
			w.engine.SetHandlerMetadata(m) // PHP classes' config() in the step jobs it enqueues
		}
		w.wfServices = newWorkflowServices(w.engine, cfg, w.log)
	}
	if !cfg.ClaimAll && !reg.hasFallback() {
		w.handlers = reg.Names() // never nil: with Workflows, may be empty
		if reg.runsMachines() {
			w.handlers = append(w.handlers, MachineActionHandler) // machine_claim.go
		}
		if len(w.handlers) == 0 && !cfg.Workflows {
			return nil, errors.New("no handlers registered: register Go handlers, set a fallback (the PHP pool: --php), or claim everything with ClaimAll (--claim-all)")
		}
	}
	w.heartbeater = &heartbeater{w: w}
	w.sessions = newSessionAgent(w)
	w.setupWebhooks()
	if cfg.Workflows && cfg.DeadlineInterval > 0 {
		w.deadlines = &deadlineChecker{c: c, reg: reg, interval: cfg.DeadlineInterval, log: w.log}
	}
	if cfg.ScheduleInterval > 0 {
		w.scheduler = &scheduler{c: c, interval: cfg.ScheduleInterval, log: w.log}
	}
	if cfg.RescueSchedule != "off" {
		w.rescuer = &rescuer{c: c, reg: reg, schedule: cfg.RescueSchedule, log: w.log,
			holdOff: 2 * cfg.HeartbeatInterval, troubleAt: w.dbTroubleAt.Load}
	}
	if p := RetentionPolicyOf(cfg); cfg.RetentionSchedule != "off" && len(p) > 0 {
		w.retention = &retention{c: c, policy: p, schedule: cfg.RetentionSchedule, log: w.log}
	}
	return w, nil
}

func newWorkerID() string {
	host, _ := os.Hostname()
	if len(host) > 32 {
		host = host[:32]
	}
	id := ulid.Make().String()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.ToLower(id[len(id)-8:]))
}

// ID is the worker's reserved_by value.
func (w *Worker) ID() string { return w.id }

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	w.mu.Lock()
	n := len(w.running)
	w.mu.Unlock()
	return WorkerStats{
		Claimed: w.stats.claimed.Load(), Completed: w.stats.completed.Load(), Retried: w.stats.retried.Load(),
		Buried: w.stats.buried.Load(), HandedBack: w.stats.handedBack.Load(), Refused: w.stats.refused.Load(),
		Chained: w.stats.chained.Load(), Running: n,
	}
}

// Start checks the schema and starts claiming. ctx bounds only the start-up
// checks; call Stop to stop.
func (w *Worker) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("worker already started")
	}
	if err := w.store.CheckSchema(ctx); err != nil {
		return err
	}
	// The two steps that can fail come first, so a failed start leaves
	// nothing running.
	if w.rescuer != nil {
		if err := w.rescuer.Start(); err != nil {
			return err
		}
	}
	if w.retention != nil {
		if err := w.retention.Start(); err != nil {
			if w.rescuer != nil {
				w.rescuer.Stop()
			}
			return err
		}
	}
	if err := w.sessions.Start(ctx); err != nil {
		if w.rescuer != nil {
			w.rescuer.Stop()
		}
		if w.retention != nil {
			w.retention.Stop()
		}
		return err
	}
	w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
	w.claimCtx, w.cancelClaim = context.WithCancel(context.Background())
	w.sampleMemory()
	if w.hooks != nil {
		w.hooks.Start(ctx)
	}
	go w.completeLoop()
	w.heartbeater.Start()
	if w.deadlines != nil {
		w.deadlines.Start()
	}
	if w.scheduler != nil {
		w.scheduler.Start()
	}
	if w.wfServices != nil {
		w.wfServices.Start(ctx)
	}
	for _, l := range w.lanes {
		w.claimersWG.Add(1)
		go w.claimLoop(l)
	}
	w.log.Info("worker started", "queues", w.cfg.Queues, "concurrency", w.cfg.Concurrency,
		"handlers", handlerSummary(w.handlers), "workflows", w.engine != nil)
	w.reportLeftWork(ctx)
	w.reportPHPOnly()
	w.ready.Store(true)
	return nil
}

// reportLeftWork warns about pending jobs on the worker's queues that it
// will not claim, and says what would run them: a worker that silently
// leaves a backlog is the first trap of a new setup.
func (w *Worker) reportLeftWork(ctx context.Context) {
	pending, err := w.store.PendingHandlers(ctx, w.cfg.Queues)
	if err != nil {
		w.log.Warn("could not read the pending jobs for the start-up report", "err", err)
		return
	}
	for _, p := range pending {
		if why := w.wontClaim(p); why != "" {
			w.log.Warn("pending jobs this worker will not run", "handler", p.Handler, "jobs", p.N, "why", why)
		}
	}
	w.reportMixedFleet(ctx, pending) // fleet.go
}

// wontClaim says why this worker will not claim p's jobs, or "".
func (w *Worker) wontClaim(p store.PendingHandler) string {
	if p.IsStep {
		switch {
		case w.engine == nil:
			return "workflow steps are off (--no-workflows; Config.Workflows)"
		case w.engine.StepRunner() != nil || slices.Contains(w.wfHandlers, p.Handler):
			return ""
		default:
			return "no Go step handler for this class: register one (RegisterStep) or run PHP steps with --php"
		}
	}
	if w.handlers == nil || slices.Contains(w.handlers, p.Handler) {
		return ""
	}
	return "no Go handler: register one, run PHP handlers with --php, or leave it to the plugin's workers"
}

func handlerSummary(h []string) string {
	if h == nil {
		return "all (claim-all)"
	}
	return strings.Join(h, ",")
}

// Run starts the worker, waits for ctx to end, then stops it gracefully.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return w.Stop(context.Background())
}

// Stop stops claiming, lets in-flight jobs finish within ShutdownGrace (or
// until ctx ends, if sooner), then cancels the rest with ErrShutdown and
// hands them back to pending with their attempt restored; claimed jobs that
// never started are handed back the same way. Pending completions are
// written before it returns. Nothing is lost: whatever could not be written
// stays processing and the stale sweep picks it up.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { w.stopErr = w.stop(ctx) })
	return w.stopErr
}

func (w *Worker) stop(ctx context.Context) error {
	if !w.started.Load() {
		return nil
	}
	w.ready.Store(false)
	w.log.Info("worker stopping", "running", w.Stats().Running, "grace", w.cfg.ShutdownGrace)
	if w.retention != nil {
		w.retention.Stop() // ends a sweep under way at its next statement
	}
	if w.scheduler != nil {
		w.scheduler.Stop() // no new jobs once stopping
	}
	w.cancelClaim()
	w.claimersWG.Wait()

	grace, cancel := context.WithTimeout(ctx, w.cfg.ShutdownGrace)
	defer cancel()
	if !waitGroup(grace, &w.execWG) {
		w.log.Warn("shutdown grace over: cancelling running jobs", "running", w.Stats().Running)
		w.cancelJobs(ErrShutdown)
		extra, cancel2 := context.WithTimeout(context.Background(), abandonAfter)
		defer cancel2()
		if !waitGroup(extra, &w.execWG) {
			w.abandonRunning()
			w.awaitFinishing()
		}
	}
	close(w.completerStop)
	<-w.completerDone
	w.heartbeater.Stop()
	if w.rescuer != nil {
		w.rescuer.Stop()
	}
	if w.deadlines != nil {
		w.deadlines.Stop()
	}
	if w.wfServices != nil {
		w.wfServices.Stop()
	}
	w.stopWebhooks(grace)
	closing, cancel3 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel3()
	w.sessions.Stop(closing)
	w.cancelJobs(ErrShutdown)
	st := w.Stats()
	w.log.Info("worker stopped", "completed", st.Completed, "chained", st.Chained, "retried", st.Retried, "buried", st.Buried, "handed_back", st.HandedBack)
	return nil
}

// abandonAfter is how long a cancelled handler may take to return before
// the worker stops waiting for it.
const abandonAfter = 2 * time.Second

func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// abandonRunning hands back attempts whose handlers ignored cancellation.
// Their goroutines may still finish, but their results are dropped.
func (w *Worker) abandonRunning() {
	w.mu.Lock()
	var give []store.Attempt
	for _, rj := range w.running {
		if rj.state.CompareAndSwap(stateRunning, stateAbandoned) {
			give = append(give, rj.job.attempt)
		}
	}
	w.mu.Unlock()
	w.log.Warn("handlers did not return after cancellation; handing their jobs back", "jobs", len(give))
	w.handBack(give)
}

// awaitFinishing waits for executors whose handlers did return and that are
// still writing their outcome, so Stop never returns before those writes.
func (w *Worker) awaitFinishing() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		busy := 0
		for _, rj := range w.running {
			if rj.state.Load() != stateAbandoned {
				busy++
			}
		}
		w.mu.Unlock()
		if busy == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handBack returns attempts to pending with the attempt restored.
func (w *Worker) handBack(attempts []store.Attempt) {
	if len(attempts) == 0 {
		return
	}
	if err := w.persist("hand back", func(ctx context.Context) error {
		n, err := w.store.UnclaimJobs(ctx, attempts)
		if err == nil {
			w.stats.handedBack.Add(int64(n))
		}
		return err
	}); err != nil {
		w.log.Error("handing jobs back failed; the stale sweep will recover them", "jobs", len(attempts), "err", err)
	}
}

// persist runs a state write, retrying through lost connections with
// backoff. It returns nil once the write is done, or the error it gave up
// on: one a retry cannot fix (the server refused the write itself), or any
// error once the process is shutting down for good. Either way the row
// stays processing and the stale sweep recovers it unless the caller does
// better.
func (w *Worker) persist(what string, fn func(ctx context.Context) error) error {
	delay := 50 * time.Millisecond
	deadline := time.Now().Add(w.cfg.ShutdownGrace + time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryableWrite(err) {
			return err
		}
		stopping := w.claimCtx.Err() != nil
		if stopping && time.Now().After(deadline) {
			w.log.Error("giving up writing job state while stopping; the stale sweep will recover it", "what", what, "err", err)
			return err
		}
		w.log.Warn("writing job state failed; retrying", "what", what, "err", err, "in", delay)
		time.Sleep(delay + rand.N(delay/2))
		delay = min(delay*2, 5*time.Second)
	}
}

// retryableWrite reports whether a failed write may succeed when simply
// tried again.
func retryableWrite(err error) bool {
	return store.ConnectionLost(err) || store.Transient(err) || errors.Is(err, context.DeadlineExceeded)
}

// claimLoop fills free slots with claimed jobs until Stop.
// lane is one claimer with its share of the slots.
type lane struct {
	size      int
	inflight  int // guarded by Worker.mu
	slotFreed chan struct{}
	kick      chan struct{} // new work this process made: claim now, not after the poll interval
	idleAfter atomic.Int64  // worker_limits.go: the finish count its last empty round began after
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
		n, err := w.claimRound(l, want)
		w.endRound(l, gen, want, n, err)
		if store.ConnectionLost(err) {
			w.dbTroubleAt.Store(time.Now().UnixNano())
		}
		if err != nil && store.Transient(err) {
			// A deadlock or lock wait rolled the claim back (nothing ran):
			// expected now and then under contention, so just try again.
			w.log.Debug("claim rolled back by the server; retrying", "err", err)
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
// it claimed.
//
// The handlers start only after the commit. A claim the server rolls back
// (a deadlock victim against PHP's claim, a lost connection) has then run
// nothing, and its rows, pending again, are run once by whoever claims them
// next. Keeping the transaction open while quick jobs ran would save a row
// write per job, but a rollback after a handler ran is that handler run
// twice, which a mixed fleet hits every few seconds.
func (w *Worker) claimRound(l *lane, n int) (int, error) {
	// Not claimCtx: cancelling a claim mid-COMMIT would leave its rows in
	// doubt; Stop waits for the round instead.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	paused := w.pausedQueues(ctx)
	start := time.Now()
	tx, err := w.store.BeginClaim(ctx)
	if err != nil {
		return 0, err
	}
	g := w.newGroupAdmission()
	rows, err := w.selectClaim(ctx, tx, g, paused, n)
	if err != nil {
		_ = tx.Rollback()
		return 0, err
	}
	if len(rows) == 0 && len(g.logs) > 0 && w.claimCtx.Err() == nil {
		// Only QUEUETY_DEBUG rows to write (and the rows deferred, which
		// stay untouched).
		return 0, tx.Commit(ctx, store.ClaimCommit{WorkerID: w.id, Logs: g.logs})
	}
	if len(rows) == 0 || w.claimCtx.Err() != nil {
		// Nothing to do, or Stop arrived while claiming: every selected row
		// goes back untouched, attempts unspent (rows the session claim
		// buried stay buried).
		return 0, tx.End(ctx, w.id)
	}
	commit := store.ClaimCommit{WorkerID: w.id, Running: make([]int64, len(rows)), Logs: w.claimLogs(g, rows)}
	for i := range rows {
		commit.Running[i] = rows[i].ID
	}
	if err := tx.Commit(ctx, commit); err != nil {
		return 0, err
	}
	w.observeClaim(start, len(rows))
	w.startJobs(l, rows)
	return len(rows), nil
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
	var open []string
	for _, q := range w.cfg.Queues {
		if !paused[q] {
			open = append(open, q)
		}
	}
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

// maxGroupRereads bounds the reads of one queue in one claim when its
// candidates keep hitting saturated groups.
const maxGroupRereads = 4

// groupAdmission is one claim's view of the concurrency groups it met:
// their processing counts (read once, under the group's named lock) and
// which of them are saturated.
type groupAdmission struct {
	busy      map[string]int
	locked    map[string]bool
	saturated map[string]bool
	// rate limits, cost budgets and debug rows (admission.go)
	limitAdmission
}

func (w *Worker) newGroupAdmission() *groupAdmission {
	return &groupAdmission{busy: map[string]int{}, locked: map[string]bool{}, saturated: map[string]bool{},
		limitAdmission: limitAdmission{debug: w.cfg.Debug}}
}

func (g *groupAdmission) saturatedList() []string {
	out := make([]string, 0, len(g.saturated))
	for name := range g.saturated {
		out = append(out, name)
	}
	return out
}

// admit applies Queuety's concurrency-group limit (ResourceManager::admit,
// first check): a job whose group already has concurrency_limit jobs
// processing is not started. It stays locked but unwritten in the claim, so
// at commit it is simply pending again with its attempt unspent, as PHP's
// unclaim leaves it. The group's named lock, held until the claim commits,
// keeps two Go workers from admitting past the limit at once. It returns
// the admitted rows and how many it deferred. Rate limits and cost budgets
// are checked around it, in the plugin's order (admission.go).
func (w *Worker) admit(ctx context.Context, tx *store.ClaimTx, g *groupAdmission, rows []store.JobRow) ([]store.JobRow, int, error) {
	var fresh []string
	for i := range rows {
		if rows[i].ConcurrencyGroup.Valid && rows[i].ConcurrencyLimit.Valid {
			if name := rows[i].ConcurrencyGroup.String; !g.locked[name] && !g.saturated[name] {
				fresh = append(fresh, name)
			}
		}
	}
	if len(fresh) > 0 {
		locked, err := tx.LockGroups(ctx, fresh, time.Second)
		if err != nil {
			return nil, 0, err
		}
		busy, err := tx.ProcessingByGroup(ctx, locked)
		if err != nil {
			return nil, 0, err
		}
		for _, name := range locked {
			g.locked[name], g.busy[name] = true, busy[name]
		}
	}
	limits, err := w.prepareLimits(ctx, tx, g, rows)
	if err != nil {
		return nil, 0, err
	}
	admitted := rows[:0:0]
	deferred := 0
	for i, r := range rows {
		g.seen = append(g.seen, r.ID)
		if g.waiting[r.Queue] {
			deferred++ // behind a row waiting for its class's settings
			continue
		}
		if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
			g.debugf(r.Queue, "Checking rate limit for handler: %s", r.Handler)
		}
		if !w.admitsRate(g, &r, limits[i]) {
			deferred++
			continue
		}
		grouped := r.ConcurrencyGroup.Valid && r.ConcurrencyLimit.Valid
		if grouped {
			name := r.ConcurrencyGroup.String
			if !g.locked[name] || g.busy[name] >= int(r.ConcurrencyLimit.Int64) {
				// Not locked within the timeout: another claim is admitting
				// this group; it is left out of this claim's later reads too.
				g.saturated[name] = true
				deferred++
				if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
					g.debugf(r.Queue, "Deferring job #%d (%s): Concurrency group '%s' is saturated (%d/%d).", r.ID, r.Handler, name, g.busy[name], r.ConcurrencyLimit.Int64)
				}
				w.log.Debug("deferring job: concurrency group saturated", "job", r.ID, "group", name, "limit", r.ConcurrencyLimit.Int64)
				continue
			}
		}
		if reason := w.budgetRefusal(g, &r); reason != "" {
			deferred++
			if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
				g.debugf(r.Queue, "Deferring job #%d (%s): %s", r.ID, r.Handler, reason)
			}
			w.log.Debug("deferring job: cost budget", "job", r.ID, "reason", reason)
			continue
		}
		if grouped {
			g.busy[r.ConcurrencyGroup.String]++
		}
		w.takeLimits(g, &r, limits[i])
		w.logAdmitted(g, &r)
		admitted = append(admitted, r)
	}
	return admitted, deferred, nil
}

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
	m := make(map[string]bool, len(qs))
	for _, q := range qs {
		m[q] = true
	}
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

// startJobs runs the jobs of a committed claim, each in its own goroutine.
func (w *Worker) startJobs(l *lane, rows []store.JobRow) {
	now := time.Now()
	w.mu.Lock()
	l.inflight += len(rows)
	for i := range rows {
		// The row read before the claim shows the attempts before it; the
		// claim incremented them, as Queue::claim does.
		rj, ctx := w.newRunning(rows[i], l, now, min(rows[i].Attempts+1, 255))
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

// execute runs one attempt of a claimed job and records its outcome.
func (w *Worker) execute(ctx context.Context, rj *running) {
	defer w.execWG.Done()
	if w.isWorkflowStep(&rj.row) {
		w.executeWorkflowStep(ctx, rj)
		return
	}
	settings, err := w.runAttempt(ctx, rj)
	o := &outcome{err: err, settings: settings, duration: time.Since(rj.start)}
	defer w.release(rj)
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return // abandoned by Stop, which already handed it back
	}
	cause := context.Cause(ctx)
	switch {
	case err == nil && rj.row.BatchID.Valid:
		w.observeJob(&rj.row, OutcomeCompleted, o.duration)
		w.completeBatchJob(rj, o.duration) // with its batch's counters (batch.go)
	case err == nil:
		w.observeJob(&rj.row, OutcomeCompleted, o.duration)
		w.mu.Lock()
		w.settling[rj.row.ID] = rj
		w.mu.Unlock()
		select {
		case w.completions <- store.Completion{Attempt: rj.job.attempt, Log: w.completedLog(rj, o.duration)}:
		case <-w.completerDone:
			w.settled([]store.Completion{{Attempt: rj.job.attempt}})
			w.log.Error("completion after the completer stopped; the stale sweep will retry the job", "job", rj.row.ID)
		}
	case errors.Is(cause, ErrJobLost):
		w.stats.refused.Add(1)
		w.log.Warn("job lost while running (rescued or deleted); its result is dropped", "job", rj.row.ID, "err", err)
	case errors.Is(cause, ErrShutdown), errors.Is(err, errLeaveToPHP):
		w.handBack([]store.Attempt{rj.job.attempt})
	default:
		w.fail(rj, o)
	}
}

func (w *Worker) completedLog(rj *running, d time.Duration) store.LogRow {
	l := store.LogFor(&rj.row, store.EventCompleted)
	l.Attempt = store.Int(int64(rj.row.Attempts))
	l.DurationMS = store.Int(d.Milliseconds())
	mem := rj.memPeakKB.Load()
	if mem <= 0 {
		mem = w.memKB.Load()
	}
	l.MemoryPeakKB = store.Int(mem)
	return l
}

// runAttempt validates the row, resolves the handler and runs it under the
// attempt's time limit.
func (w *Worker) runAttempt(ctx context.Context, rj *running) (attemptSettings, error) {
	row := &rj.row
	settings := attemptSettings{maxAttempts: row.MaxAttempts, timeout: w.cfg.JobTimeout, backoff: w.cfg.Backoff}
	if row.Priority < int(PriorityLow) || row.Priority > int(PriorityUrgent) {
		return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid priority %d: Queuety priorities are 0 (low) to 3 (urgent).", row.Priority)}
	}
	payload, err := phpjson.DecodeString(row.Payload)
	if err != nil {
		return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid payload: not valid JSON (%v).", err)}
	}
	if _, ok := payload.AsObject(); !ok {
		if _, ok := payload.AsList(); !ok {
			return settings, &InvalidJobError{Reason: fmt.Sprintf("Invalid payload: a JSON object is required, got %s.", payload.Kind())}
		}
	}
	h, ok := w.lookupHandler(row.Handler)
	if !ok {
		return settings, &InvalidJobError{Reason: "Handler not found: " + row.Handler}
	}
	settings = w.c.settingsFor(w.reg, row, payload)
	rj.job.Payload = stripReserved(payload)

	// The PHP pool starts the limit when a PHP process takes the job, so
	// the wait for a free process does not count (workflow/time_limit.go).
	tctx, cancel := workflow.LimitFor(ctx, h.h, settings.timeout, &TimeoutError{Seconds: int(settings.timeout.Seconds())})
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- callHandler(tctx, h.h, rj.job) }()
	select {
	case err = <-done:
	case <-tctx.Done():
		// Give the handler a moment to notice; past that, stop waiting:
		// its goroutine is left to finish on its own.
		select {
		case err = <-done:
		case <-time.After(abandonAfter):
			w.log.Warn("handler ignored its cancelled context; no longer waiting for it", "job", row.ID, "handler", row.Handler)
			err = context.Cause(tctx)
		}
	}
	if err != nil {
		var te *TimeoutError
		if errors.As(context.Cause(tctx), &te) && tctx.Err() != nil && ctx.Err() == nil {
			err = te
		}
	}
	return settings, err
}

// stripReserved drops Queuety's reserved keys, which a handler never sees.
func stripReserved(v phpjson.Value) phpjson.Value {
	obj, ok := v.AsObject()
	if !ok {
		return v
	}
	_, hasRT := obj.Get(RuntimeKey)
	_, hasCC := obj.Get(ChainCatchKey)
	if !hasRT && !hasCC {
		return v
	}
	out := phpjson.NewObject()
	for k, e := range obj.All() {
		if k != RuntimeKey && k != ChainCatchKey {
			out.Set(k, e)
		}
	}
	return phpjson.ObjectValue(out)
}

func callHandler(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return h.Handle(ctx, job)
}

// failure builds the write for a failed attempt: retried after backoff
// while attempts remain, otherwise buried; invalid rows are buried at once.
// Log rows are Queuety's: `failed, retried` or `buried`.
func (w *Worker) failure(rj *running, o *outcome) store.Failure {
	row, err := &rj.row, o.err
	settings, delay := declaredSettings(err, o.settings, row.Attempts)
	var invalid *InvalidJobError
	bury := errors.As(err, &invalid) || row.Attempts >= settings.maxAttempts
	base := store.LogFor(row, store.EventFailed)
	base.Attempt = store.Int(int64(row.Attempts))
	base.DurationMS = store.Int(o.duration.Milliseconds())
	base.ErrorMessage = store.String(err.Error())
	base.ErrorClass = store.String(errorClass(err))
	base.ErrorTrace = store.String(errorTrace(err))
	return failureWrite(row, rj.job.attempt, bury, delay, base)
}

// failureWrite is the write of a failed attempt given its `failed` log row:
// buried (the row becomes the `buried` one) or retried after delay
// (`failed, retried`), as Queuety logs them.
func failureWrite(row *store.JobRow, at store.Attempt, bury bool, delay time.Duration, failed store.LogRow) store.Failure {
	f := store.Failure{Attempt: at, Bury: bury, ErrorMessage: failed.ErrorMessage.String}
	if bury {
		failed.Event = store.EventBuried
		f.Logs = []store.LogRow{failed}
		return f
	}
	f.Delay = delay
	retried := store.LogFor(row, store.EventRetried)
	retried.Attempt = failed.Attempt
	f.Logs = []store.LogRow{failed, retried}
	return f
}

// fail records a failed attempt. A failure the server refuses to store (a
// value it will not take although FitText cut it, a trigger, a column
// changed by hand) buries the job with a message saying so, so the attempt
// is never left processing and retried by the stale sweep under a message
// that hides the cause.
func (w *Worker) fail(rj *running, o *outcome) {
	f := w.failure(rj, o)
	applied, cb, err := w.writeJobFailure(rj, f)
	if err != nil && !retryableWrite(err) {
		w.log.Error("the server refused this job's failure; burying it", "job", rj.row.ID, "err", err)
		f = refusedWrite(&rj.row, rj.job.attempt, o.duration, "its failure", err, o.err.Error())
		o = &outcome{err: errors.New(f.ErrorMessage), duration: o.duration}
		applied, cb, err = w.writeJobFailure(rj, f)
	}
	if err != nil {
		w.log.Error("writing the job's failure failed; the stale sweep will recover the job", "job", rj.row.ID, "err", err)
		return
	}
	if !applied {
		w.stats.refused.Add(1)
		w.log.Warn("failure refused: the attempt no longer holds the row", "job", rj.row.ID)
		return
	}
	w.countOutcome(rj, o, f)
	w.notifyFailure(rj, o, f.Bury)
	if f.Bury {
		w.afterBury(rj, o.err, cb) // chain catch, fail_action, batch callbacks (chain_catch.go)
	}
}

func (w *Worker) writeFailure(f store.Failure) (applied bool, err error) {
	err = w.persist("fail", func(ctx context.Context) error {
		var err error
		applied, err = w.store.FailJob(ctx, f)
		return err
	})
	return applied, err
}

// refusedWrite is the burial of an attempt whose outcome (what) the server
// refused to store: a short message with the server's reason and the
// start of the original error, and a `buried` log row without a trace.
func refusedWrite(row *store.JobRow, at store.Attempt, d time.Duration, what string, serverErr error, original string) store.Failure {
	msg := fmt.Sprintf("queuety-go could not record %s: %s", what, store.FitChars(serverErr.Error(), 500))
	if original != "" {
		msg += "; the error was: " + store.FitChars(original, 1000)
	}
	buried := store.LogFor(row, store.EventBuried)
	buried.Attempt = store.Int(int64(row.Attempts))
	buried.DurationMS = store.Int(d.Milliseconds())
	buried.ErrorMessage = store.String(msg)
	buried.ErrorClass = store.String("QueuetyGo\\WriteRefused")
	return store.Failure{Attempt: at, Bury: true, ErrorMessage: msg, Logs: []store.LogRow{buried}}
}

// countOutcome updates the counters and logs a written failure, as the
// write f decided it (buried, or retried after f.Delay).
func (w *Worker) countOutcome(rj *running, o *outcome, f store.Failure) {
	row := &rj.row
	if f.Bury {
		w.stats.buried.Add(1)
		w.observeJob(row, OutcomeBuried, o.duration)
		w.log.Warn("job buried", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts, "err", o.err)
		return
	}
	w.stats.retried.Add(1)
	w.observeJob(row, OutcomeRetried, o.duration)
	w.log.Info("job failed; retrying", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts,
		"in", f.Delay, "err", o.err)
}

// writeCompletions writes a batch of completions. A batch the server
// refuses (not a lost connection or a deadlock, which persist retries) is
// split and written again in halves, so one row it will not take is found
// and buried alone and never holds back the others.
func (w *Worker) writeCompletions(batch []store.Completion) {
	var res store.CompleteResult
	err := w.persist("complete", func(ctx context.Context) error {
		var err error
		res, err = w.store.CompleteJobs(ctx, batch)
		return err
	})
	switch {
	case err == nil:
	case retryableWrite(err):
		w.log.Error("writing completions failed; the stale sweep will recover the jobs", "jobs", len(batch), "err", err)
		return
	case len(batch) > 1:
		w.writeCompletions(batch[:len(batch)/2])
		w.writeCompletions(batch[len(batch)/2:])
		return
	default:
		c := batch[0]
		w.log.Error("the server refused this job's completion; burying it", "job", c.ID, "err", err)
		row := &store.JobRow{ID: c.ID, Queue: c.Log.Queue, Handler: c.Log.Handler, Attempts: c.Attempt.Attempt,
			WorkflowID: c.Log.WorkflowID, StepIndex: c.Log.StepIndex}
		d := time.Duration(c.Log.DurationMS.Int64) * time.Millisecond
		if _, err := w.writeFailure(refusedWrite(row, c.Attempt, d, "its completion", err, "")); err != nil {
			w.log.Error("burying it failed too; the stale sweep will recover the job", "job", c.ID, "err", err)
		} else {
			w.observeJob(row, OutcomeBuried, d)
		}
		w.stats.buried.Add(1)
		return
	}
	w.stats.completed.Add(int64(len(res.Completed) + len(res.Already)))
	w.notifyCompleted(batch, res)
	if len(res.Refused) > 0 {
		w.stats.refused.Add(int64(len(res.Refused)))
		w.log.Warn("completions refused: those attempts no longer hold their rows (rescued or deleted)", "jobs", res.Refused)
	}
}
