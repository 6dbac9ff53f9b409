package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Worker claims jobs from the Queuety tables and runs them with Go
// handlers. Start it, then Stop it; it is not restartable.
//
// Inside, claim lanes each take as many rows per round trip as they have
// free slots and keep the claim transaction open for a short window while
// the jobs start (see claimRound); each job runs in its own goroutine; a
// completer writes the completions of jobs that outlived their window in
// batches; a heartbeater keeps long jobs' reserved_at fresh; and a rescuer
// sweeps stale rows on a cron schedule. The handler names are read from the
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
	lanes   []*lane

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
	deadlines   *deadlineChecker // Config.Workflows: check_deadlines

	// The paused-queue cache, shared by the lanes: the last read, loaded
	// without a lock by readers that must not wait on the database (the
	// chain check runs inside a transaction); pausedMu serializes reads.
	pausedMu   sync.Mutex
	pausedSnap atomic.Pointer[pausedSnapshot]
	// pausedRefreshing: a refresh of the snapshot for the chain is running.
	pausedRefreshing atomic.Bool

	memKB    atomic.Int64
	memAt    time.Time
	started  atomic.Bool
	stopOnce sync.Once
	stopErr  error
	stats    workerCounters
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

	// Claim-window bookkeeping (see claimRound). Until the window closes
	// the row is still pending in the database, locked by the claim
	// transaction; outcome and progress are kept here and written by it.
	mu         sync.Mutex
	inWindow   bool
	outcome    *outcome
	progress   []byte
	resolved   chan struct{} // closed once the window committed or rolled back
	rolledBack bool          // read only after resolved is closed
	committed  atomic.Bool
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
		completions:   make(chan store.Completion, cfg.Concurrency),
		completerStop: make(chan struct{}),
		completerDone: make(chan struct{}),
	}
	// Claim lanes split the slots: while one lane writes its window,
	// another selects and runs, so the database always has work.
	nLanes := max(1, min(cfg.ClaimLanes, cfg.Concurrency))
	for i := 0; i < nLanes; i++ {
		size := cfg.Concurrency / nLanes
		if i < cfg.Concurrency%nLanes {
			size++
		}
		w.lanes = append(w.lanes, &lane{size: size, slotFreed: make(chan struct{}, 1), kick: make(chan struct{}, 1), windowCh: make(chan *running, size)})
	}
	w.id = cfg.WorkerID
	if w.id == "" {
		w.id = newWorkerID()
	}
	if len(w.id) > 64 {
		return nil, fmt.Errorf("worker id %q: longer than 64 characters", w.id)
	}
	w.log = cfg.Logger.With("worker", w.id)
	if cfg.Workflows {
		w.engine = workflow.NewEngine(c.store, reg.steps)
		w.engine.MemoryKB = w.memKB.Load
		w.engine.StepTimeout = w.stepTimeout
		w.engine.StepBatch = cfg.WorkflowStepBatch
		w.engine.SetLocalRuntime(w.localRuntime()) // local activities run here (local_activity.go)
		w.engine.SetChainRuntime(w.chainRuntime())
		w.wfHandlers = workflowHandlers(reg)
		if r := reg.stepRunner(); r != nil {
			w.engine.SetStepRunner(r) // and every workflow step is claimed
		}
		w.wfServices = newWorkflowServices(w.engine, cfg, w.log)
	}
	if !cfg.ClaimAll && !reg.hasFallback() {
		w.handlers = reg.Names() // never nil: with Workflows, may be empty
		if len(w.handlers) == 0 && !cfg.Workflows {
			return nil, errors.New("no handlers registered: register Go handlers, set a fallback (the PHP pool: --php), or claim everything with ClaimAll (--claim-all)")
		}
	}
	w.heartbeater = &heartbeater{w: w}
	w.sessions = newSessionAgent(w)
	if cfg.Workflows && cfg.DeadlineInterval > 0 {
		w.deadlines = &deadlineChecker{c: c, reg: reg, interval: cfg.DeadlineInterval, log: w.log}
	}
	if cfg.RescueSchedule != "off" {
		w.rescuer = &rescuer{c: c, reg: reg, schedule: cfg.RescueSchedule, log: w.log}
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
	if err := w.sessions.Start(ctx); err != nil {
		if w.rescuer != nil {
			w.rescuer.Stop()
		}
		return err
	}
	w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
	w.claimCtx, w.cancelClaim = context.WithCancel(context.Background())
	w.sampleMemory()
	go w.completeLoop()
	w.heartbeater.Start()
	if w.deadlines != nil {
		w.deadlines.Start()
	}
	if w.wfServices != nil {
		w.wfServices.Start(ctx)
	}
	for _, l := range w.lanes {
		w.claimersWG.Add(1)
		go w.claimLoop(l)
	}
	w.log.Info("worker started", "queues", w.cfg.Queues, "concurrency", w.cfg.Concurrency,
		"handlers", handlerSummary(w.handlers))
	return nil
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
	w.log.Info("worker stopping", "running", w.Stats().Running, "grace", w.cfg.ShutdownGrace)
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
	w.persist("hand back", func(ctx context.Context) error {
		n, err := w.store.UnclaimJobs(ctx, attempts)
		if err == nil {
			w.stats.handedBack.Add(int64(n))
		}
		return err
	})
}

// persist runs a state write, retrying through lost connections with
// backoff; it gives up only when the process is shutting down for good, in
// which case the row stays processing and the stale sweep recovers it.
func (w *Worker) persist(what string, fn func(ctx context.Context) error) bool {
	delay := 50 * time.Millisecond
	deadline := time.Now().Add(w.cfg.ShutdownGrace + time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return true
		}
		if !store.ConnectionLost(err) && !store.Transient(err) && !errors.Is(err, context.DeadlineExceeded) {
			// Not something a retry fixes: leave the row to the stale sweep
			// rather than loop on it.
			w.log.Error("writing job state failed; the stale sweep will recover the job", "what", what, "err", err)
			return false
		}
		stopping := w.claimCtx.Err() != nil
		if stopping && time.Now().After(deadline) {
			w.log.Error("giving up writing job state while stopping; the stale sweep will recover it", "what", what, "err", err)
			return false
		}
		w.log.Warn("writing job state failed; retrying", "what", what, "err", err, "in", delay)
		time.Sleep(delay + rand.N(delay/2))
		delay = min(delay*2, 5*time.Second)
	}
}

// claimLoop fills free slots with claimed jobs until Stop.
// lane is one claimer with its share of the slots.
type lane struct {
	size      int
	inflight  int // guarded by Worker.mu
	slotFreed chan struct{}
	kick      chan struct{} // new work this process made: claim now, not after the poll interval
	windowCh  chan *running // jobs finishing inside the lane's current window
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
		n, err := w.claimRound(l, min(free, w.cfg.MaxClaimBatch))
		if err != nil && store.Transient(err) {
			// A deadlock or lock wait rolled the window back: expected now
			// and then under contention, so just try again shortly.
			w.log.Debug("claim window rolled back by the server; retrying", "err", err)
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

// claimRound runs one claim window: lock up to n jobs from the queues in
// strict order (paused ones skipped), start their handlers at once, give
// them ClaimWindow to finish, then write every row once and commit (see
// store.ClaimTx). It returns how many jobs it claimed.
func (w *Worker) claimRound(l *lane, n int) (int, error) {
	// Not claimCtx: cancelling a claim mid-COMMIT would leave its rows in
	// doubt; Stop waits for the round instead.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+w.cfg.ClaimWindow)
	defer cancel()
	paused := w.pausedQueues(ctx)
	tx, err := w.store.BeginClaim(ctx)
	if err != nil {
		return 0, err
	}
	claimable := store.ClaimParams{Handlers: w.handlers, WorkflowHandlers: w.wfHandlers,
		AllWorkflowSteps: w.engine != nil && w.engine.StepRunner() != nil}
	var open []string
	for _, q := range w.cfg.Queues {
		if !paused[q] {
			open = append(open, q)
		}
	}
	// Session-bound jobs first: ordinary jobs never take them, and a busy
	// queue of plain jobs must not starve them. They are admitted by their
	// session (its max_concurrent_activities), not by concurrency groups.
	sessionRows, err := w.sessions.claim(ctx, tx, open, claimable, n)
	if err != nil {
		_ = tx.Rollback()
		return 0, fmt.Errorf("worker sessions: %w", err)
	}
	var rows []store.JobRow
	for _, q := range open {
		if len(sessionRows)+len(rows) >= n {
			break
		}
		p := claimable
		p.Queue, p.Limit = q, n-len(sessionRows)-len(rows)
		got, err := tx.Select(ctx, p)
		if err != nil {
			_ = tx.Rollback()
			return 0, fmt.Errorf("queue %s: %w", q, err)
		}
		rows = append(rows, got...)
	}
	if rows, err = w.admit(ctx, tx, rows); err != nil {
		_ = tx.Rollback()
		return 0, err
	}
	rows = append(sessionRows, rows...)
	if len(rows) == 0 || w.claimCtx.Err() != nil {
		// Nothing to do, or Stop arrived while claiming: every selected row
		// goes back untouched, attempts unspent (rows the session claim
		// buried stay buried).
		return 0, tx.End(ctx, w.id)
	}
	batch := w.startJobs(l, rows)
	w.awaitWindow(l, batch)
	f := store.Finalization{WorkerID: w.id, Logs: make([]store.LogRow, 0, 2*len(batch))}
	var doneInWindow []*running
	for _, rj := range batch {
		rj.mu.Lock()
		rj.inWindow = false
		o, progress := rj.outcome, rj.progress
		rj.mu.Unlock()
		if w.isWorkflowStep(&rj.row) {
			// The engine writes its started log and step_started event.
			f.Running = append(f.Running, rj.row.ID)
			continue
		}
		started := store.LogFor(&rj.row, store.EventStarted)
		started.Attempt = store.Int(int64(rj.job.Attempt))
		f.Logs = append(f.Logs, started)
		if progress != nil {
			if f.Progress == nil {
				f.Progress = map[int64][]byte{}
			}
			f.Progress[rj.row.ID] = progress
		}
		if o == nil {
			f.Running = append(f.Running, rj.row.ID)
			continue
		}
		doneInWindow = append(doneInWindow, rj)
		if o.err == nil {
			f.Completed = append(f.Completed, rj.row.ID)
			f.Logs = append(f.Logs, w.completedLog(rj, o.duration))
			continue
		}
		fl := w.failure(rj, o)
		f.Failed = append(f.Failed, store.WindowFailure{ID: rj.row.ID, Bury: fl.Bury, Delay: fl.Delay, ErrorMessage: fl.ErrorMessage})
		f.Logs = append(f.Logs, fl.Logs...)
	}
	err = tx.Finalize(ctx, f)
	for _, rj := range batch {
		rj.rolledBack = err != nil
		if err == nil {
			rj.committed.Store(true)
		} else if rj.outcome == nil {
			// Its row is pending again; another worker may take it.
			rj.cancel(ErrJobLost)
		}
		close(rj.resolved)
	}
	for _, rj := range doneInWindow {
		if err == nil {
			w.countOutcome(rj, rj.outcome)
		}
		w.release(rj)
	}
	if err != nil {
		return 0, err
	}
	return len(batch), nil
}

// admit applies Queuety's concurrency-group limit (ResourceManager::admit,
// first check): a job whose group already has concurrency_limit jobs
// processing is not started. It stays locked but unwritten in the window, so
// at commit it is simply pending again with its attempt unspent, as PHP's
// unclaim leaves it. The group's named lock, held until the window
// commits, keeps two Go workers from admitting past the limit at once.
func (w *Worker) admit(ctx context.Context, tx *store.ClaimTx, rows []store.JobRow) ([]store.JobRow, error) {
	var groups []string
	for i := range rows {
		if rows[i].ConcurrencyGroup.Valid && rows[i].ConcurrencyLimit.Valid {
			groups = append(groups, rows[i].ConcurrencyGroup.String)
		}
	}
	if len(groups) == 0 {
		return rows, nil
	}
	locked, err := tx.LockGroups(ctx, groups, time.Second)
	if err != nil {
		return nil, err
	}
	busy, err := tx.ProcessingByGroup(ctx, locked)
	if err != nil {
		return nil, err
	}
	isLocked := make(map[string]bool, len(locked))
	for _, g := range locked {
		isLocked[g] = true
	}
	w.mu.Lock()
	for _, rj := range w.running {
		// Ours still in a window of another lane are not yet processing rows.
		if g := rj.row.ConcurrencyGroup; g.Valid && !rj.committed.Load() {
			busy[g.String]++
		}
	}
	w.mu.Unlock()
	admitted := rows[:0:0]
	for _, r := range rows {
		if r.ConcurrencyGroup.Valid && r.ConcurrencyLimit.Valid {
			g := r.ConcurrencyGroup.String
			if !isLocked[g] || busy[g] >= int(r.ConcurrencyLimit.Int64) {
				w.log.Debug("deferring job: concurrency group saturated", "job", r.ID, "group", g, "limit", r.ConcurrencyLimit.Int64)
				continue
			}
			busy[g]++
		}
		admitted = append(admitted, r)
	}
	return admitted, nil
}

// awaitWindow waits until every job of the batch has finished, or the
// claim window is over.
func (w *Worker) awaitWindow(l *lane, batch []*running) {
	if w.cfg.ClaimWindow <= 0 {
		return
	}
	t := time.NewTimer(w.cfg.ClaimWindow)
	defer t.Stop()
	for finished := 0; finished < len(batch); {
		select {
		case <-l.windowCh:
			finished++
		case <-t.C:
			return
		}
	}
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

func (w *Worker) startJobs(l *lane, rows []store.JobRow) []*running {
	now := time.Now()
	batch := make([]*running, len(rows))
	// Drain stale signals of an earlier window that ended on its timer.
	for len(l.windowCh) > 0 {
		<-l.windowCh
	}
	w.mu.Lock()
	l.inflight += len(rows)
	for i := range rows {
		// The row still shows the attempts before this claim; the window's
		// commit increments them, as Queue::claim does.
		rj, ctx := w.newRunning(rows[i], l, now, min(rows[i].Attempts+1, 255))
		rj.inWindow, rj.resolved, rj.sessionLease = true, make(chan struct{}), sessionLease(&rows[i])
		batch[i] = rj
		w.running[rj.row.ID] = rj
		w.execWG.Add(1)
		go w.execute(ctx, rj)
	}
	w.mu.Unlock()
	w.stats.claimed.Add(int64(len(rows)))
	return batch
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

// closedChan is the resolved channel of a job that was never in a claim
// window.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// execute runs one attempt and records its outcome: inside the claim
// window it hands the outcome to the claimer, after it writes it itself.
func (w *Worker) execute(ctx context.Context, rj *running) {
	defer w.execWG.Done()
	if w.isWorkflowStep(&rj.row) {
		w.executeWorkflowStep(ctx, rj)
		return
	}
	settings, err := w.runAttempt(ctx, rj)
	o := &outcome{err: err, settings: settings, duration: time.Since(rj.start)}
	rj.mu.Lock()
	if rj.inWindow {
		rj.outcome = o
		rj.mu.Unlock()
		rj.lane.windowCh <- rj
		return // the claimer writes it and releases the slot
	}
	rj.mu.Unlock()
	<-rj.resolved
	defer w.release(rj)
	if rj.rolledBack {
		return // the row went back to pending with the window
	}
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return // abandoned by Stop, which already handed it back
	}
	cause := context.Cause(ctx)
	switch {
	case err == nil:
		select {
		case w.completions <- store.Completion{Attempt: rj.job.attempt, Log: w.completedLog(rj, o.duration)}:
		case <-w.completerDone:
			w.log.Error("completion after the completer stopped; the stale sweep will retry the job", "job", rj.row.ID)
		}
	case errors.Is(cause, ErrJobLost):
		w.stats.refused.Add(1)
		w.log.Warn("job lost while running (rescued or deleted); its result is dropped", "job", rj.row.ID, "err", err)
	case errors.Is(cause, ErrShutdown):
		w.handBack([]store.Attempt{rj.job.attempt})
	default:
		w.fail(rj, o)
	}
}

func (w *Worker) completedLog(rj *running, d time.Duration) store.LogRow {
	l := store.LogFor(&rj.row, store.EventCompleted)
	l.Attempt = store.Int(int64(rj.row.Attempts))
	l.DurationMS = store.Int(d.Milliseconds())
	l.MemoryPeakKB = store.Int(w.memKB.Load())
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
	h, ok := w.reg.lookup(row.Handler)
	if !ok {
		return settings, &InvalidJobError{Reason: "Handler not found: " + row.Handler}
	}
	settings = w.c.settingsFor(w.reg, row, payload)
	rj.job.Payload = stripReserved(payload)

	tctx, cancel := context.WithTimeoutCause(ctx, settings.timeout, &TimeoutError{Seconds: int(settings.timeout.Seconds())})
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
	var invalid *InvalidJobError
	bury := errors.As(err, &invalid) || row.Attempts >= o.settings.maxAttempts
	base := store.LogFor(row, store.EventFailed)
	base.Attempt = store.Int(int64(row.Attempts))
	base.DurationMS = store.Int(o.duration.Milliseconds())
	base.ErrorMessage = store.String(err.Error())
	base.ErrorClass = store.String(truncate(errorClass(err), 255))
	base.ErrorTrace = store.String(errorTrace(err))
	return failureWrite(row, rj.job.attempt, bury, o.settings.backoff.Delay(row.Attempts), base)
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

// fail records a failed attempt after its claim window.
func (w *Worker) fail(rj *running, o *outcome) {
	f := w.failure(rj, o)
	var applied bool
	w.persist("fail", func(ctx context.Context) error {
		var err error
		applied, err = w.store.FailJob(ctx, f)
		return err
	})
	if !applied {
		w.stats.refused.Add(1)
		w.log.Warn("failure refused: the attempt no longer holds the row", "job", rj.row.ID)
		return
	}
	w.countOutcome(rj, o)
}

// countOutcome updates the counters and logs a written outcome.
func (w *Worker) countOutcome(rj *running, o *outcome) {
	row := &rj.row
	switch {
	case o.err == nil:
		w.stats.completed.Add(1)
	case errors.As(o.err, new(*InvalidJobError)) || row.Attempts >= o.settings.maxAttempts:
		w.stats.buried.Add(1)
		w.log.Warn("job buried", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts, "err", o.err)
	default:
		w.stats.retried.Add(1)
		w.log.Info("job failed; retrying", "job", row.ID, "handler", row.Handler, "attempt", row.Attempts,
			"in", o.settings.backoff.Delay(row.Attempts), "err", o.err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// completeLoop writes successful completions in batches: whatever has
// arrived while the previous batch was being written goes in the next.
func (w *Worker) completeLoop() {
	defer close(w.completerDone)
	batch := make([]store.Completion, 0, 1024)
	for {
		select {
		case c := <-w.completions:
			batch = append(batch, c)
		case <-w.completerStop:
			for {
				select {
				case c := <-w.completions:
					batch = append(batch, c)
					continue
				default:
				}
				break
			}
			w.flush(batch)
			return
		}
	drain:
		for len(batch) < cap(batch) {
			select {
			case c := <-w.completions:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		w.flush(batch)
		batch = batch[:0]
		w.sampleMemory()
	}
}

func (w *Worker) flush(batch []store.Completion) {
	if len(batch) == 0 {
		return
	}
	var res store.CompleteResult
	w.persist("complete", func(ctx context.Context) error {
		var err error
		res, err = w.store.CompleteJobs(ctx, batch)
		return err
	})
	w.stats.completed.Add(int64(len(res.Completed) + len(res.Already)))
	if len(res.Refused) > 0 {
		w.stats.refused.Add(int64(len(res.Refused)))
		w.log.Warn("completions refused: those attempts no longer hold their rows (rescued or deleted)", "jobs", res.Refused)
	}
}
