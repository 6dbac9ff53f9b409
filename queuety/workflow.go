package queuety

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/steps"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Workflow steps in Go. A step handler is registered under the class name
// the workflow's step definitions carry (->then(IncStep::class) in PHP,
// Then("IncStep") in Go), so a worker with Config.Workflows runs the steps
// of workflows written by either side. Step jobs are claimed only with
// Config.Workflows; their completion goes through the workflow engine's
// step-completion transaction (package workflow), not the plain job
// completion.

// RegisterStep adds a workflow step handler under a class name. It panics
// on a programming error, like Register. WithMaxAttempts becomes the
// handler metadata PHP reads from a class attribute: the step's jobs are
// enqueued with that many attempts unless the definition says otherwise.
func (r *Registry) RegisterStep(class string, fn workflow.StepFunc, opts ...HandlerOption) {
	if fn == nil {
		panic(fmt.Sprintf("queuety: RegisterStep(%q) with a nil handler", class))
	}
	must(r.steps.Step(class, fn, stepMetadata(class, opts)))
}

// RegisterItemStep adds a for_each item handler (PHP's ForEachHandler)
// under a class name.
func (r *Registry) RegisterItemStep(class string, fn workflow.ItemFunc, opts ...HandlerOption) {
	if fn == nil {
		panic(fmt.Sprintf("queuety: RegisterItemStep(%q) with a nil handler", class))
	}
	must(r.steps.Item(class, fn, stepMetadata(class, opts)))
}

// RegisterReducer adds a for_each reducer under a class name.
func (r *Registry) RegisterReducer(class string, fn workflow.ReducerFunc) {
	must(r.steps.Reducer(class, fn))
}

// RegisterCondition adds a repeat condition under a class name.
func (r *Registry) RegisterCondition(class string, fn workflow.ConditionFunc) {
	must(r.steps.Condition(class, fn))
}

// RegisterCompensation adds a compensation handler under a class name
// (run in reverse order when a workflow with compensate_on_failure fails).
func (r *Registry) RegisterCompensation(class string, fn workflow.CompensationFunc) {
	must(r.steps.Compensation(class, fn))
}

// Steps returns the registry's workflow handlers (also the handler
// metadata source for workflow.Builder.WithHandlerMetadata).
func (r *Registry) Steps() *workflow.Handlers { return r.steps }

func must(err error) {
	if err != nil {
		panic("queuety: " + err.Error())
	}
}

func stepMetadata(class string, opts []HandlerOption) workflow.HandlerMetadata {
	var o handlerOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxAttempts < 0 || o.maxAttempts > 255 {
		panic(fmt.Sprintf("queuety: step %q: max attempts %d outside 1..255", class, o.maxAttempts))
	}
	m := workflow.HandlerMetadata{}
	if o.meta != nil {
		m = *o.meta
	}
	if o.maxAttempts > 0 {
		m.MaxAttempts = int64(o.maxAttempts)
	}
	if o.backoff != nil {
		m.Backoff = o.backoff.value()
	}
	if o.rateLimit != nil {
		m.RateLimit = o.rateLimit
	}
	return m
}

// DispatchWorkflow stores a workflow built with workflow.Builder: the
// workflows row, its first step's jobs, the workflow_started log and, with
// an idempotency key, the dispatch key, in one transaction, exactly as the
// plugin's dispatch() writes them. With an idempotency key already used it
// returns the existing workflow's id and existing=true.
func (c *Client) DispatchWorkflow(ctx context.Context, d *workflow.Dispatch) (id int64, existing bool, err error) {
	// The plugin lets a workflow go unnamed; a name it has fits
	// workflows.name and holds no control character.
	if d.Workflow.Name != "" {
		if err := store.CheckName(store.WorkflowName, d.Workflow.Name); err != nil {
			return 0, false, err
		}
	}
	if err := workflow.CheckLocalActivities(d); err != nil {
		return 0, false, err
	}
	return c.engine(nil).Dispatch(ctx, d)
}

// workflowHandlers is what a workflow-enabled worker claims among workflow
// step jobs. With a fallback that runs steps (the PHP pool, see
// SetFallback) the worker claims every step instead (AllWorkflowSteps).
func workflowHandlers(reg *Registry) []string {
	return append(reg.steps.Names(), engine.Placeholders(steps.All())...)
}
