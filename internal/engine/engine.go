package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Engine advances workflows on the plugin's tables: it runs claimed
// workflow step jobs (Go step handlers and the __queuety_* placeholders it
// implements) and settles each one in the step-completion transaction of
// Queuety's Workflow::advance_step (spec §3.3). All SQL goes through the
// store's WorkflowTx.
//
// The engine files, one topic each: engine_run.go (running a claimed job,
// the worker's part of Worker::process_job), advance.go (the step
// transaction: the guards and finalize_step_completion), kind.go (the
// step kinds the engine is given, package steps), engine_fail.go (step failures and Workflow::fail), engine_state.go
// (merge, pruning, compensation snapshots, budgets) and engine_events.go
// (logs and workflow_events rows).
type Engine struct {
	store    *store.Store
	handlers *workflow.Handlers
	// host is the worker the engine runs steps for; nil for an engine
	// that serves a client (EngineConfig.Host).
	host Host
	// mem is the memory figure of an engine without a host.
	mem memSampler
	// runner runs the steps without a Go handler (step_runner.go).
	runner StepRunner
	// classMeta is the metadata of handler classes without a Go step
	// handler (handler_metadata.go).
	classMeta workflow.HandlerMetadataSource
	// local lets a worker run local activities in process
	// (local_activity.go); nil sends them through the claim.
	local *localRuntime
	// stepBatch is how many step completions, submitted at the same time
	// by different goroutines, may share one database transaction (group
	// commit, step_batch.go); 1 gives every step its own.
	stepBatch int
	batch     stepBatcher
	// states and wakes coalesce the single-row reads of every step and of
	// every workflow that ends (coalesce.go).
	states *coalescer[store.DependencyRow]
	// chain lets a worker run the steps it enqueues (chain.go).
	chain *chainRuntime
	wakes *coalescer[store.WakeFacts]
	// stepFailure hears of each recorded failed step attempt (notify.go).
	stepFailure func(StepFailure)
	// wakeErr receives the errors of post-commit wake-ups (engine_terminal.go).
	wakeErr func(workflowID int64, err error)
	// leftToPHP: workflows whose terminal handling was left to PHP workers
	// and already logged (engine_php_terminal.go).
	leftToPHP sync.Map
	// kinds are the step kinds the engine runs (kind.go).
	kinds kindSet
	// maxForEachItems is EngineConfig.MaxForEachItems.
	maxForEachItems int
	// forEachPage is EngineConfig.ForEachPageSize.
	forEachPage int
}

// EngineConfig is everything an Engine depends on, given once to
// NewEngine. Only Store is required.
type EngineConfig struct {
	Store *store.Store
	// Kinds are the step kinds the engine runs (kind.go); steps.All()
	// gives Queuety's. A step of a type no kind claims fails.
	Kinds []Kind
	// Handlers are the Go step and item handlers; nil runs placeholders
	// only.
	Handlers *workflow.Handlers
	// Runner runs the steps without a Go handler (the PHP pool,
	// step_runner.go); with one, the engine supports every step.
	Runner StepRunner
	// Metadata is the metadata of handler classes without a Go step
	// handler (handler_metadata.go).
	Metadata workflow.HandlerMetadataSource
	// Host is the worker the engine runs claimed steps for. Without one
	// (an engine serving a client) no step is chained, local activities
	// go through the claim, steps have no time limit and the memory
	// figure is the process's.
	Host Host
	// ChainSteps is how many steps may follow one claimed step in the
	// host (chain.go); 0 disables chaining.
	ChainSteps int
	// LocalLease is how long a local attempt's workflow task lease lasts
	// after a renewal (the host's stale timeout); 0 is 300 s.
	LocalLease time.Duration
	// StepBatch is how many step completions may share one transaction
	// (step_batch.go); 0 is DefaultStepBatch, 1 gives every step its own.
	StepBatch int
	// ReadTimeout bounds the shared reads of the steps' states and of the
	// wake-ups; 0 is 30 s.
	ReadTimeout time.Duration
	// Logger receives the outcomes of local attempts; nil discards.
	Logger *slog.Logger
	// OnWakeError receives the errors of the wake-ups that follow a
	// committed terminal transition (a parent waiting on the workflow);
	// the wait sweeper retries them.
	OnWakeError func(workflowID int64, err error)
	// OnStepFailure is told of each failed step attempt once its rows are
	// written (notify.go).
	OnStepFailure func(StepFailure)
	// MaxForEachItems caps the items of one for_each step (queuety
	// Config.MaxForEachItems); 0 or negative: no cap but the workflow's
	// own budget.
	MaxForEachItems int
	// ForEachPageSize is how many branch jobs of a for_each step one
	// transaction inserts (0: DefaultForEachPageSize). A step with more
	// items plans in pages, its cursor in the for_each_plans table, so
	// its first branches run while the rest are inserted and a plan cut
	// short resumes where it stopped.
	ForEachPageSize int
}

// DefaultForEachPageSize is EngineConfig.ForEachPageSize's default: a
// fan-out of up to this many items plans in one transaction, as the
// plugin does.
const DefaultForEachPageSize = 1000

// Host is the worker an engine runs steps for: what only the worker knows,
// asked when the engine needs it.
type Host interface {
	// Owner is the worker's reserved_by value.
	Owner() string
	// Accepting reports whether the worker still takes new work; once it
	// stops, a local step is left pending for the claim.
	Accepting() bool
	// Chains reports whether the worker would claim a job of handler on
	// queue now (it serves the queue, the queue is not paused, it is not
	// stopping).
	Chains(queue, handler string) bool
	// StepTimeout gives a step job's time limit and the error an attempt
	// that runs past it fails with; a zero limit means none. The handler's
	// context is cancelled at the limit.
	StepTimeout(job *store.JobRow) (time.Duration, error)
	// JobContext is the context local attempts run under: the worker's,
	// not the settled step job's (localRuntime.Context).
	JobContext() context.Context
	// MemoryKB is logs.memory_peak_kb (PHP writes memory_get_peak_usage).
	MemoryKB() int64
}

// NewEngine returns an engine configured by cfg.
func NewEngine(cfg EngineConfig) *Engine {
	handlers := cfg.Handlers
	if handlers == nil {
		handlers = workflow.NewHandlers()
	}
	e := &Engine{store: cfg.Store, handlers: handlers, kinds: newKindSet(cfg.Kinds), host: cfg.Host, runner: cfg.Runner, classMeta: cfg.Metadata,
		stepBatch: cfg.StepBatch, stepFailure: cfg.OnStepFailure, wakeErr: cfg.OnWakeError, maxForEachItems: cfg.MaxForEachItems,
		forEachPage: cfg.ForEachPageSize, states: newCoalescer(cfg.Store.WorkflowsByID), wakes: newCoalescer(cfg.Store.WakeFacts)}
	if e.stepBatch == 0 {
		e.stepBatch = DefaultStepBatch
	}
	if e.forEachPage <= 0 {
		e.forEachPage = DefaultForEachPageSize
	}
	if cfg.ReadTimeout > 0 {
		e.states.timeout, e.wakes.timeout = cfg.ReadTimeout, cfg.ReadTimeout
	}
	if h := cfg.Host; h != nil {
		// Local activities the host's step completions reach run in its
		// process (local_activity.go).
		e.local = &localRuntime{Owner: h.Owner(), Lease: cfg.LocalLease, Accept: h.Accepting, Logger: cfg.Logger,
			Context: h.JobContext}
		if cfg.ChainSteps > 0 {
			e.chain = &chainRuntime{Owner: h.Owner(), Max: cfg.ChainSteps, Accept: h.Chains}
		}
	}
	return e
}

// MaxForEachItems is the engine's cap on the items of one for_each step;
// 0 when there is none (EngineConfig.MaxForEachItems).
func (e *Engine) MaxForEachItems() int64 { return int64(max(e.maxForEachItems, 0)) }

// ForEachPageSize is how many branch jobs of a for_each step one
// transaction inserts (EngineConfig.ForEachPageSize).
func (e *Engine) ForEachPageSize() int { return e.forEachPage }

// Handlers returns the engine's Go step handlers.
func (e *Engine) Handlers() *workflow.Handlers { return e.handlers }

func runtimeErrorf(format string, args ...any) error {
	return &workflow.RuntimeError{Message: fmt.Sprintf(format, args...)}
}

// Dispatch stores a built workflow (Builder.Build): the workflows row, its
// dispatch key, the first step's jobs and the workflow_started log, in one
// transaction. With an idempotency key already used, the existing id is
// returned with existing=true.
func (e *Engine) Dispatch(ctx context.Context, d *workflow.Dispatch) (id int64, existing bool, err error) {
	if d == nil {
		return 0, false, errors.New("workflow: nil dispatch")
	}
	return e.store.InsertWorkflow(ctx, store.InsertWorkflow{
		Name:             d.Workflow.Name,
		State:            d.Workflow.State,
		TotalSteps:       d.Workflow.TotalSteps,
		ParentWorkflowID: d.Workflow.ParentWorkflowID,
		ParentStepIndex:  d.Workflow.ParentStepIndex,
		DeadlineAt:       d.Workflow.DeadlineAt(e.store.Now()),
		IdempotencyKey:   d.IdempotencyKey,
		Queue:            d.Queue,
		Jobs:             storeJobs(d.Jobs),
	})
}

// storeJobs converts step jobs to the store's columns.
func storeJobs(jobs []workflow.StepJob) []store.StepJob {
	out := make([]store.StepJob, len(jobs))
	for i, j := range jobs {
		out[i] = store.StepJob{
			Queue: j.Queue, Handler: j.Handler, Payload: j.Payload, Priority: int(j.Priority),
			MaxAttempts: int(j.MaxAttempts), StepIndex: j.StepIndex,
			Delay:            time.Duration(j.DelaySeconds) * time.Second,
			ConcurrencyGroup: j.ConcurrencyGroup, ConcurrencyLimit: int(j.ConcurrencyLimit),
			CostUnits: int(j.CostUnits),
			SessionID: j.SessionID, WorkerSession: j.WorkerSession,
		}
	}
	return out
}

// memoryKB is the host's memory figure, or else the process's.
func (e *Engine) memoryKB() int64 {
	if e.host != nil {
		return e.host.MemoryKB()
	}
	return e.mem.kb()
}

// memSampler is the process's memory in KiB, sampled at most once a second
// (ReadMemStats stops the world).
type memSampler struct {
	kiB    atomic.Int64
	readAt atomic.Int64
}

func (m *memSampler) kb() int64 {
	now := time.Now().UnixNano()
	if last := m.readAt.Load(); now-last > int64(time.Second) && m.readAt.CompareAndSwap(last, now) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.kiB.Store(int64(ms.Sys / 1024))
	}
	return m.kiB.Load()
}

// encodeObject is json_encode of a PHP array.
func encodeObject(o *phpjson.Object) ([]byte, error) {
	return phpjson.Encode(phpjson.ObjectValue(o))
}

// Supports reports whether the engine runs jobs of handler: a registered
// Go step or item handler, the placeholder of one of its kinds, or any
// other class when a StepRunner is set.
func (e *Engine) Supports(handler string) bool {
	if workflow.IsPlaceholderHandler(handler) {
		_, ok := e.kinds.byPlaceholder[handler]
		return ok
	}
	if e.runner != nil {
		return true
	}
	if _, ok := e.handlers.LookupStep(handler); ok {
		return true
	}
	_, ok := e.handlers.LookupItem(handler)
	return ok
}
