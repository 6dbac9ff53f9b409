package workflow

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
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
	handlers *Handlers
	// MemoryKB supplies logs.memory_peak_kb (a process figure; PHP writes
	// memory_get_peak_usage). Nil uses the Go runtime's, sampled.
	MemoryKB func() int64
	// StepTimeout gives a step job's time limit and the error an attempt
	// that runs past it fails with; nil or a zero limit means none. The
	// handler's context is cancelled at the limit.
	StepTimeout func(job *store.JobRow) (time.Duration, error)
	// runner runs the steps without a Go handler (step_runner.go).
	runner StepRunner
	// classMeta is the metadata of handler classes without a Go step
	// handler (handler_metadata.go).
	classMeta HandlerMetadataSource
	// local lets a worker run local activities in process
	// (local_activity.go); nil sends them through the claim.
	local *LocalRuntime
	// StepBatch is how many step completions, submitted at the same time
	// by different goroutines, may share one database transaction (group
	// commit, step_batch.go); 0 or 1 gives every step its own. NewEngine
	// sets DefaultStepBatch. Set it before the engine runs steps.
	StepBatch int
	batch     stepBatcher
	// states and wakes coalesce the single-row reads of every step and of
	// every workflow that ends (coalesce.go).
	states *coalescer[store.DependencyRow]
	// chain lets a worker run the steps it enqueues (chain.go).
	chain *ChainRuntime
	wakes *coalescer[store.WakeFacts]
	// stepFailure hears of each recorded failed step attempt (notify.go).
	stepFailure func(StepFailure)
	// leftToPHP: workflows whose terminal handling was left to PHP workers
	// and already logged (engine_php_terminal.go).
	leftToPHP sync.Map
	// kinds are the step kinds the engine runs (kind.go).
	kinds kindSet
}

// NewEngine returns an engine running handlers and the step kinds on s
// (steps.All() gives Queuety's). handlers may be nil (then only
// placeholders run).
func NewEngine(s *store.Store, handlers *Handlers, kinds ...Kind) *Engine {
	if handlers == nil {
		handlers = NewHandlers()
	}
	return &Engine{store: s, handlers: handlers, StepBatch: DefaultStepBatch, kinds: newKindSet(kinds),
		states: newCoalescer(s.WorkflowsByID), wakes: newCoalescer(s.WakeFacts)}
}

// SetReadTimeout bounds the shared reads of the steps' states and of the
// wake-ups (default 30 s); set it before the engine runs steps.
func (e *Engine) SetReadTimeout(d time.Duration) {
	e.states.timeout, e.wakes.timeout = d, d
}

// Handlers returns the engine's Go step handlers.
func (e *Engine) Handlers() *Handlers { return e.handlers }

// Placeholders lists the __queuety_* placeholder handlers the engine runs
// itself: all of Queuety's.
func Placeholders() []string {
	return []string{HandlerDelay, HandlerForEach, HandlerRepeat, HandlerWaitForSignal, HandlerWaitForWorkflows,
		HandlerStartWorkflows, HandlerRunWorkflow}
}

// ConstraintViolation is Queuety's WorkflowConstraintViolationException: a
// budget or guardrail was exceeded. The step's job is buried and the
// workflow fails without retrying (for a for_each branch it is recorded as
// a branch failure).
type ConstraintViolation struct{ Message string }

func (e *ConstraintViolation) Error() string { return e.Message }

// ErrorClass is the PHP class written to logs.error_class.
func (e *ConstraintViolation) ErrorClass() string {
	return `Queuety\Exceptions\WorkflowConstraintViolationException`
}

// IsConstraintViolation reports whether err is (or wraps) one.
func IsConstraintViolation(err error) bool {
	var cv *ConstraintViolation
	return errors.As(err, &cv)
}

// RuntimeError is an engine error PHP raises as a RuntimeException (an
// unknown _next_step target, a for_each items key that is not a list...):
// the step fails and is retried like a handler error.
type RuntimeError struct{ Message string }

func (e *RuntimeError) Error() string { return e.Message }

// ErrorClass is the PHP class written to logs.error_class.
func (e *RuntimeError) ErrorClass() string { return "RuntimeException" }

func runtimeErrorf(format string, args ...any) error {
	return &RuntimeError{Message: fmt.Sprintf(format, args...)}
}

// Dispatch stores a built workflow (Builder.Build): the workflows row, its
// dispatch key, the first step's jobs and the workflow_started log, in one
// transaction. With an idempotency key already used, the existing id is
// returned with existing=true.
func (e *Engine) Dispatch(ctx context.Context, d *Dispatch) (id int64, existing bool, err error) {
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
func storeJobs(jobs []StepJob) []store.StepJob {
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

var (
	memKB     atomic.Int64
	memReadAt atomic.Int64
)

// memoryKB is the process's memory in KiB, sampled at most once a second
// (ReadMemStats stops the world).
func (e *Engine) memoryKB() int64 {
	if e.MemoryKB != nil {
		return e.MemoryKB()
	}
	now := time.Now().UnixNano()
	if last := memReadAt.Load(); now-last > int64(time.Second) && memReadAt.CompareAndSwap(last, now) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		memKB.Store(int64(ms.Sys / 1024))
	}
	return memKB.Load()
}

// encodeObject is json_encode of a PHP array.
func encodeObject(o *phpjson.Object) ([]byte, error) {
	return phpjson.Encode(phpjson.ObjectValue(o))
}

// Supports reports whether the engine runs jobs of handler: a registered
// Go step or item handler, the placeholder of one of its kinds, or any
// other class when a StepRunner is set.
func (e *Engine) Supports(handler string) bool {
	if IsPlaceholderHandler(handler) {
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
