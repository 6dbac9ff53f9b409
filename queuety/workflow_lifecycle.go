package queuety

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/steps"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Workflow lifecycle (Queuety's cancel_workflow, pause_workflow,
// resume_workflow, retry_workflow, check_deadlines). reg supplies the Go
// handlers these may run: compensations, on_cancel and on_deadline
// handlers (all registered with RegisterCompensation: each is
// handle(public state, payload)) and the handler metadata of re-enqueued
// steps; with the PHP pool as its fallback, the classes without a Go
// handler run in PHP. nil runs none of them, as PHP skips a class that
// does not exist. An operation the workflow's status refuses ("Workflow 7
// is not paused.") returns an error workflow.IsLifecycleError reports.

// DefaultDeadlineInterval is how often a worker with Config.Workflows
// checks workflow deadlines (PHP's worker: every 60 s).
const DefaultDeadlineInterval = 60 * time.Second

// ErrWorkflowNotFound is returned for a workflow id with no row.
var ErrWorkflowNotFound = store.ErrWorkflowNotFound

// engine is the Client's engine for reg's handlers (nil: none), built on
// first use and kept: the engine's shared reads and its once-per-process
// notes (a workflow left to PHP workers) then span the Client's calls.
func (c *Client) engine(reg *Registry) *engine.Engine {
	cfg := c.engineConfig(reg)
	key := engineKey{reg: reg, runner: cfg.Runner, meta: cfg.Metadata}
	if !comparableKey(cfg.Runner) || !comparableKey(cfg.Metadata) {
		return engine.NewEngine(cfg) // a fallback that cannot be a map key
	}
	c.engines.mu.Lock()
	defer c.engines.mu.Unlock()
	if e, ok := c.engines.m[key]; ok {
		return e
	}
	if c.engines.m == nil {
		c.engines.m = map[engineKey]*engine.Engine{}
	}
	e := engine.NewEngine(cfg)
	c.engines.m[key] = e
	return e
}

// engineSet is a Client's engines, one per registry and the fallback the
// registry had when its engine was built: a registry given a PHP pool
// (SetFallback) after its first use gets an engine that runs PHP steps.
type engineSet struct {
	mu sync.Mutex
	m  map[engineKey]*engine.Engine
}

type engineKey struct {
	reg    *Registry
	runner engine.StepRunner
	meta   workflow.HandlerMetadataSource
}

// comparableKey reports whether v can be part of a map key (an interface
// holding a func or a struct of them cannot).
func comparableKey(v any) bool { return v == nil || reflect.TypeOf(v).Comparable() }

// engineConfig is the configuration of an engine running reg's handlers.
func (c *Client) engineConfig(reg *Registry) engine.EngineConfig {
	cfg := engine.EngineConfig{Store: c.store, Kinds: steps.All(), MaxForEachItems: c.cfg.MaxForEachItems,
		ForEachPageSize: c.cfg.ForEachPageSize}
	if reg == nil {
		return cfg
	}
	cfg.Handlers = reg.steps
	if r := reg.stepRunner(); r != nil {
		cfg.Runner = r // PHP compensations, on_cancel and on_deadline handlers run in the pool
	}
	if m := reg.classMetadata(); m != nil {
		cfg.Metadata = m // retried and resumed steps keep their PHP class's settings
	}
	return cfg
}

// CancelWorkflow is Queuety::cancel_workflow: a workflow that is not
// completed or cancelled becomes cancelled, its pending and processing
// jobs are buried ("Workflow cancelled") and workflow_cancelled is logged;
// then its compensations run in reverse (reason "cancel") and its
// on_cancel handler gets the public state.
func (c *Client) CancelWorkflow(ctx context.Context, id int64, reg *Registry) error {
	return c.engine(reg).Cancel(ctx, id)
}

// PauseWorkflow is Queuety::pause_workflow: a running workflow stops
// enqueueing steps (the one in flight finishes). workflow_paused is logged
// even when nothing changed, as PHP does; then a state error says the
// workflow was not running.
func (c *Client) PauseWorkflow(ctx context.Context, id int64) error {
	changed, err := c.engine(nil).Pause(ctx, id)
	if err != nil {
		return err
	}
	if !changed {
		return &workflow.LifecycleError{Message: fmt.Sprintf("Workflow %d is not running.", id)}
	}
	return nil
}

// ResumeWorkflow is Queuety::resume_workflow: a paused workflow runs again
// from its current step, which is enqueued.
func (c *Client) ResumeWorkflow(ctx context.Context, id int64, reg *Registry, opts ...RerunOption) error {
	return c.rerunEngine(reg, opts).Resume(ctx, id)
}

// RetryWorkflow is Queuety::retry_workflow: a failed workflow that was not
// compensated runs its failed step again (a for_each step only its items
// without a result; a parallel step every branch).
func (c *Client) RetryWorkflow(ctx context.Context, id int64, reg *Registry, opts ...RerunOption) error {
	return c.rerunEngine(reg, opts).Retry(ctx, id)
}

// CheckDeadlines is Workflow::check_deadlines: running workflows past
// their deadline_at get their on_deadline handler called and fail with
// "Deadline exceeded" (compensating when they opted in). It returns how
// many failed. Workers with Config.Workflows run it every
// Config.DeadlineInterval.
func (c *Client) CheckDeadlines(ctx context.Context, reg *Registry) (int, error) {
	return c.engine(reg).CheckDeadlines(ctx)
}
