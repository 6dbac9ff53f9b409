package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/queuety/internal/maintenance"
	"github.com/queuety-go/queuety/queuety/internal/scheduler"
	"github.com/queuety-go/queuety/queuety/internal/webhooks"
	store "github.com/queuety-go/queuety/sql"
)

// Worker claims jobs from the Queuety tables and runs them with Go
// handlers. Start it, then Stop it; it is not restartable.
//
// A Worker is the composition of parts, each with its own state, and
// their lifecycle (Start, Stop); it does no part's work itself:
//   - the scope (claim_scope.go): what it claims, published in its
//     registration and reported at start;
//   - the claimer (claimer.go, claim.go): claim lanes that each take as
//     many rows per round trip as they have free slots, admit them
//     (admission.go) and commit the claim before any handler starts;
//   - the runner (runner.go): each job runs in its own goroutine and
//     slot, a plain job through the executor (execute.go), a workflow step
//     through the engine;
//   - the recorder (recorder.go; batch.go, chain_catch.go and machine.go
//     for what follows a write): what becomes of a finished attempt,
//     written through the stateWriter (persist.go) and the completer
//     (completer.go), which writes completions in batches;
//   - the registry of running and settling attempts (running_set.go),
//     which the heartbeater (heartbeater.go), the session agent
//     (session_agent.go), Stop and Drained read;
//   - background loops of one shape (service.go) that sweep stale rows
//     (maintenance.go) and run the workflow and schedule services, and the
//     webhook notifier (webhooks.go).
//
// The handler names are read from the Registry when the worker is built.
type Worker struct {
	c     *Client
	cfg   Config
	store *store.Store
	reg   *Registry
	log   *slog.Logger
	id    string
	// engine runs workflow steps (Config.Workflows); nil leaves workflow
	// jobs out of the claim.
	engine *engine.Engine

	// The parts (see above); the executor, the recorder and the
	// stateWriter are reached through the runner, which Stop drives.
	scope     *claimScope
	claim     *claimer
	run       *runner
	jobs      *runningSet
	completer *completer
	sessions  *sessionAgent // registration, session admission and leases
	// The background loops (service.go), in start order, in two phases of
	// Stop: feeders make new work (retention, the scheduler) and stop
	// before the claim does; loops (heartbeater, rescuer, deadlines, wait
	// sweeper, signal poller) stop after the last completion is written.
	// The webhook notifier, a service too, stops after them (they may still
	// send), within what is left of Stop's grace (stopWebhooks).
	feeders   []service
	loops     []service
	scheduler *scheduler.Scheduler // Config.ScheduleInterval: the schedules tick
	hooks     *webhooks.Notifier   // the plugin's webhooks (webhooks.go); nil: off
	// The maintenance loops among them, by kind (nil: off): Sites kicks
	// their rounds after a batched look (sites_loops.go).
	rescuer      *maintenance.Rescuer
	retention    *maintenance.Retention
	deadlines    *maintenance.DeadlineChecker
	waitSweeper  *maintenance.WaitSweeper
	signalPoller *maintenance.SignalPoller

	mem      *memorySampler
	started  atomic.Bool
	ready    atomic.Bool // started and not stopping (Ready)
	stopOnce sync.Once
	stopErr  error
	stats    workerCounters
}

type workerCounters struct {
	claimed, completed, retried, buried, handedBack, refused, chained atomic.Int64
	claimRounds, idleLooks                                            atomic.Int64
	// claimRollbacks: claims the server rolled back (a deadlock, a lock
	// wait, a cluster's certification failure).
	claimRollbacks atomic.Int64
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
	// before them enqueued them, without a claim (internal/engine/chain.go); they
	// are not in Claimed.
	Chained int64 `json:"chained"`
	// ClaimRounds counts claim transactions opened; IdleLooks the polls of
	// an idle worker that a plain read found nothing due for, so that no
	// claim was opened.
	ClaimRounds int64 `json:"claim_rounds"`
	IdleLooks   int64 `json:"idle_looks"`
	// ClaimRollbacks counts claim rounds the server rolled back (nothing
	// ran; the rows were claimed again): deadlocks and lock waits on one
	// server, certification failures between a cluster's nodes.
	ClaimRollbacks int64 `json:"claim_rollbacks"`
	Running        int   `json:"running"`
}

// NewWorker builds a worker over the client's configuration. Every handler
// in reg is claimable; with ClaimAll, so is every other handler (and those
// are buried as not found).
func (c *Client) NewWorker(reg *Registry) (*Worker, error) {
	if reg == nil {
		reg = NewRegistry()
	}
	cfg := c.cfg
	w := &Worker{c: c, cfg: cfg, store: c.store, reg: reg, jobs: newRunningSet(), mem: &memorySampler{slots: cfg.Concurrency}}
	w.id = cfg.WorkerID
	if w.id == "" {
		w.id = newWorkerID()
	}
	if len(w.id) > 64 {
		return nil, fmt.Errorf("worker id %q: longer than 64 characters", w.id)
	}
	w.log = cfg.Logger.With("worker", w.id)
	if !cfg.Webhooks.Disabled {
		// Before the engine, which reports step failures to it.
		w.hooks = newWebhookNotifier(w.store, cfg, w.log)
	}
	scope := claimScopeParams{Reg: reg, Store: c.store, Log: w.log, Clock: orReal(cfg.Clock), Namespace: cfg.Namespace,
		Queues: cfg.Queues, WorkerID: w.id}
	if cfg.Workflows {
		// With the registry's step runner every workflow step is claimed;
		// its class metadata is PHP classes' config() in the step jobs the
		// engine enqueues; local activities run here (engine_host.go).
		w.engine = engine.NewEngine(w.engineConfig())
		scope.Steps, scope.AllSteps = true, w.engine.StepRunner() != nil
		scope.StepHandlers = workflowHandlers(reg)
	}
	if !cfg.ClaimAll && !reg.hasFallback() {
		scope.Handlers = reg.Names() // never nil: with Workflows, may be empty
		if reg.runsMachines() {
			scope.Handlers = append(scope.Handlers, machineActionHandler) // machine_claim.go
		}
		if len(scope.Handlers) == 0 && !cfg.Workflows {
			return nil, errors.New("no handlers registered: register Go handlers, set a fallback (the PHP pool: --php), or claim everything with ClaimAll (--claim-all)")
		}
	}
	w.scope = newClaimScope(scope)
	w.assemble()
	w.addServices()
	return w, nil
}

// assemble builds the worker's parts and wires them: each gets what it
// needs as params, never the Worker.
func (w *Worker) assemble() {
	c, cfg, reg := w.c, w.cfg, w.reg
	// The application clock: the session agent's loops and the claimed
	// rows' queue wait tick on it.
	clk := orReal(cfg.Clock)
	observe := observers{o: cfg.Observer, clock: clk}
	w.claim = newClaimer(claimerParams{
		Config: cfg, Store: c.store, Reg: reg, Log: w.log, WorkerID: w.id, Clock: clock.Real{},
		Claimable: w.scope.claimable(), PHPOnly: w.scope.phpOnlyClaims,
		Admit: &admitter{reg: reg, log: w.log, resources: newResourceAdmission(cfg.PluginSettings, cfg.Clock.Now),
			debug: cfg.Debug, queueBudgets: cfg.QueueCostBudgets, groupBudgets: cfg.GroupCostBudgets, steps: w.engine != nil},
		Observer: observe, Stats: &w.stats,
	})
	writes := &stateWriter{store: c.store, log: w.log, grace: cfg.ShutdownGrace, stopping: w.claim.stopped,
		handedBack: &w.stats.handedBack}
	exec := &executor{policy: c.policy(reg), lookup: handlerLookup(reg, c.machines(reg, w.log)), log: w.log}
	rec := newRecorder(recorderParams{Store: c.store, Writes: writes, Jobs: w.jobs, Reg: reg,
		Machines: c.machines(reg, cfg.Logger), Decide: exec.decideStep, Log: w.log, Observe: observe,
		Hooks: w.hooks, Stats: &w.stats, MemKB: w.mem.perSlotKB})
	w.completer = newCompleter(completerParams{Writer: rec, Jobs: w.jobs, Finished: w.claim.noteFinished,
		AfterBatch: w.mem.sample, Size: cfg.Concurrency})
	rec.Complete = w.completer.complete
	w.sessions = newSessionAgent(sessionAgentParams{
		Client: c, Jobs: w.jobs, Clock: clk, Log: w.log, WorkerID: w.id,
		Namespace: cfg.Namespace, Queues: cfg.Queues, Capabilities: cfg.Capabilities,
		MaxWorkerSessions: cfg.MaxWorkerSessions, RegistrationHeartbeat: cfg.RegistrationHeartbeat,
		PollInterval: cfg.PollInterval,
		Publish:      w.scope.publishClaims, Metrics: w.claim.metrics, Buried: rec.sessionBuried,
	})
	w.claim.Sessions = w.sessions
	w.run = newRunner(runnerParams{Exec: exec, Engine: w.engine, Record: rec, Jobs: w.jobs, Writes: writes,
		Claim: w.claim, Beat: &jobBeat{store: c.store, sessions: w.sessions}, WorkerID: w.id, Stats: &w.stats})
	w.claim.Starter = w.run
}

// addServices builds the background loops the configuration asks for, in
// start order.
func (w *Worker) addServices() {
	c, cfg, reg := w.c, w.cfg, w.reg
	w.loops = append(w.loops, newHeartbeater(heartbeatParams{
		Jobs: w.jobs, Store: w.store, WorkerID: w.id, Interval: cfg.HeartbeatInterval, Log: w.log}))
	if cfg.RescueSchedule != "off" {
		w.rescuer = newRescuer(c, reg, w.log, w.claim.troubleAt.Load)
		w.loops = append(w.loops, w.rescuer)
	}
	if cfg.Workflows && cfg.DeadlineInterval > 0 {
		w.deadlines = newDeadlineChecker(c.engine(reg), cfg, w.log)
		w.loops = append(w.loops, w.deadlines)
	}
	if cfg.Workflows && cfg.WaitSweepInterval > 0 {
		w.waitSweeper = newWaitSweeper(w.engine, cfg.WaitSweepInterval, w.log.With("service", "wait-sweeper"), cfg.Clock)
		w.loops = append(w.loops, w.waitSweeper)
	}
	if cfg.Workflows && cfg.SignalPollInterval > 0 {
		w.signalPoller = newSignalPoller(w.engine, cfg.SignalPollInterval, w.log.With("service", "signal-poller"), cfg.Clock)
		w.loops = append(w.loops, w.signalPoller)
	}
	if p := RetentionPolicyOf(cfg); cfg.RetentionSchedule != "off" && len(p) > 0 {
		w.retention = newRetention(c, p, w.log)
		w.feeders = append(w.feeders, w.retention)
	}
	if cfg.ScheduleInterval > 0 {
		w.scheduler = newScheduler(c, w.log)
		w.feeders = append(w.feeders, w.scheduler)
	}
}

// services are the worker's background loops in start order: the session
// agent (the registration must exist before the first claim), the loops,
// the webhook notifier, then the feeders.
func (w *Worker) services() []service {
	svcs := slices.Concat([]service{w.sessions}, w.loops)
	if w.hooks != nil {
		svcs = append(svcs, w.hooks)
	}
	return append(svcs, w.feeders...)
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
	n := w.jobs.count()
	return WorkerStats{
		Claimed: w.stats.claimed.Load(), Completed: w.stats.completed.Load(), Retried: w.stats.retried.Load(),
		Buried: w.stats.buried.Load(), HandedBack: w.stats.handedBack.Load(), Refused: w.stats.refused.Load(),
		Chained: w.stats.chained.Load(), ClaimRounds: w.stats.claimRounds.Load(), IdleLooks: w.stats.idleLooks.Load(),
		ClaimRollbacks: w.stats.claimRollbacks.Load(),
		Running:        n,
	}
}

// Start checks the schema and starts claiming. ctx bounds only the start-up
// checks; its values, not its end, go on to the handlers' contexts and the
// background loops. Call Stop to stop.
func (w *Worker) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("worker already started")
	}
	if err := w.store.CheckSchema(ctx); err != nil {
		return err
	}
	w.run.start(ctx)
	// Only the registration and the cron schedules can fail; a failed
	// start leaves nothing running (startServices).
	if err := startServices(ctx, w.services()); err != nil {
		w.sessions.goodbye(ctx) // the registration, if it was made
		return err
	}
	w.mem.sample()
	_ = w.completer.Start(ctx)
	w.log.Info("worker started", "queues", w.cfg.Queues, "concurrency", w.cfg.Concurrency,
		"handlers", handlerSummary(w.scope.Handlers), "workflows", w.engine != nil)
	// The reports read the pending rows before the first claim can take
	// them, so what they say is what this start found.
	w.scope.reportLeftWork(ctx)
	w.scope.reportPHPOnly()
	_ = w.claim.Start(ctx)
	w.ready.Store(true)
	return nil
}

// Run starts the worker, waits for ctx to end, then stops it gracefully.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	// ctx's values, not its end: the stop gets its grace.
	return w.Stop(context.WithoutCancel(ctx))
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
	// No new jobs once stopping; retention ends a sweep under way at its
	// next statement.
	stopServices(w.feeders)
	w.claim.Stop()

	grace, cancel := context.WithTimeout(ctx, w.cfg.ShutdownGrace)
	defer cancel()
	if !w.run.wait(grace) {
		w.log.Warn("shutdown grace over: cancelling running jobs", "running", w.Stats().Running)
		w.run.cancel(ErrShutdown)
		extra, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), abandonAfter)
		defer cancel2()
		if !w.run.wait(extra) {
			w.abandonRunning(ctx)
			w.awaitFinishing()
		}
	}
	w.completer.Stop()
	stopServices(w.loops)
	w.stopWebhooks(grace)
	w.sessions.Stop()
	w.sessions.goodbye(ctx)
	w.run.cancel(ErrShutdown)
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
func (w *Worker) abandonRunning(ctx context.Context) {
	give := w.jobs.abandon()
	w.log.Warn("handlers did not return after cancellation; handing their jobs back", "jobs", len(give))
	w.run.Writes.handBack(ctx, give)
}

// awaitFinishing waits for executors whose handlers did return and that are
// still writing their outcome, so Stop never returns before those writes.
func (w *Worker) awaitFinishing() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if w.jobs.finishing() == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
