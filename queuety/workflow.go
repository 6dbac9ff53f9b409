package queuety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
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
	return workflow.HandlerMetadata{MaxAttempts: int64(o.maxAttempts)}
}

// DispatchWorkflow stores a workflow built with workflow.Builder: the
// workflows row, its first step's jobs, the workflow_started log and, with
// an idempotency key, the dispatch key, in one transaction, exactly as the
// plugin's dispatch() writes them. With an idempotency key already used it
// returns the existing workflow's id and existing=true.
func (c *Client) DispatchWorkflow(ctx context.Context, d *workflow.Dispatch) (id int64, existing bool, err error) {
	if err := workflow.CheckLocalActivities(d); err != nil {
		return 0, false, err
	}
	return workflow.NewEngine(c.store, nil).Dispatch(ctx, d)
}

// workflowHandlers is what a workflow-enabled worker claims among workflow
// step jobs. With a fallback that runs steps (the PHP pool, see
// SetFallback) the worker claims every step instead (AllWorkflowSteps).
func workflowHandlers(reg *Registry) []string {
	return append(reg.steps.Names(), workflow.Placeholders()...)
}

// executeWorkflowStep runs a claimed workflow step job through the engine.
// The claim window writes the row as processing without waiting for it
// (the engine locks the row, which the window holds until it commits), so
// the step starts once the window has committed.
func (w *Worker) executeWorkflowStep(ctx context.Context, rj *running) {
	rj.mu.Lock()
	inWindow := rj.inWindow
	rj.mu.Unlock()
	if inWindow {
		rj.lane.windowCh <- rj // nothing to write in the window but processing
	}
	<-rj.resolved
	defer w.release(rj)
	if rj.rolledBack || rj.state.Load() != stateRunning {
		return
	}
	row := rj.row
	stepErr, err := w.engine.Run(ctx, &row, w.decideStep)
	// A settled step usually enqueued the next one (or woke a waiting
	// parent): claim it now rather than after the poll interval.
	w.kickLanes()
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return // abandoned by Stop, which already handed it back
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrShutdown):
		// Stopped mid-step: nothing was settled, the attempt goes back.
		w.handBack([]store.Attempt{rj.job.attempt})
	case err != nil && errors.Is(context.Cause(ctx), ErrJobLost):
		w.stats.refused.Add(1)
		w.log.Warn("workflow step lost while running (rescued or deleted); its result is dropped", "job", row.ID, "err", stepErr)
	case err != nil:
		w.log.Error("workflow step: recording its outcome failed; the stale sweep will deal with the job",
			"job", row.ID, "workflow", row.WorkflowID.Int64, "err", err)
	case stepErr == nil:
		w.stats.completed.Add(1)
	default:
		f := w.decideStep(&row, stepErr)
		if f.Terminal || workflow.IsConstraintViolation(stepErr) {
			w.stats.buried.Add(1)
			w.log.Warn("workflow step buried", "job", row.ID, "workflow", row.WorkflowID.Int64, "handler", row.Handler, "err", stepErr)
		} else {
			w.stats.retried.Add(1)
			w.log.Info("workflow step failed; retrying", "job", row.ID, "workflow", row.WorkflowID.Int64,
				"handler", row.Handler, "in", f.RetryDelay, "err", stepErr)
		}
	}
}

// stepTimeout is a step attempt's time limit: the job's runtime payload,
// handler options or the default, as for plain jobs.
func (w *Worker) stepTimeout(row *store.JobRow) (time.Duration, error) {
	payload, err := phpjson.DecodeString(row.Payload)
	if err != nil {
		payload = phpjson.Null()
	}
	d := w.c.settingsFor(w.reg, row, payload).timeout
	return d, &TimeoutError{Seconds: int(d.Seconds())}
}

// decideStep applies the job's attempts and backoff (runtime payload,
// handler options, defaults) to a failed step attempt.
func (w *Worker) decideStep(row *store.JobRow, err error) workflow.Failure {
	payload, perr := phpjson.DecodeString(row.Payload)
	if perr != nil {
		payload = phpjson.Null()
	}
	s := w.c.settingsFor(w.reg, row, payload)
	return workflow.Failure{
		Message:    err.Error(),
		Class:      truncate(errorClass(err), 255),
		Trace:      errorTrace(err),
		Terminal:   row.Attempts >= s.maxAttempts,
		RetryDelay: s.backoff.Delay(row.Attempts),
	}
}

// isWorkflowStep reports whether a claimed row is a workflow step the
// engine runs.
func (w *Worker) isWorkflowStep(row *store.JobRow) bool {
	return w.engine != nil && row.WorkflowID.Valid
}
