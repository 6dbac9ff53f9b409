package queuety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
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

// executeWorkflowStep runs a claimed workflow step job through the engine.
// The claim committed the row as processing before this runs. A step whose completion
// chained the next one (internal/engine/chain.go) is followed by it in the same
// slot.
func (r *runner) executeWorkflowStep(ctx context.Context, rj *running) {
	if rj.state.Load() != stateRunning {
		r.release(rj)
		return
	}
	row := rj.row
	stepErr, next, err := r.Engine.RunStep(withStepJob(ctx, rj.job), &row, r.Exec.decideStep)
	for {
		if next == nil {
			// A settled step usually enqueued the next one (or woke a
			// waiting parent): claim it now rather than after the poll
			// interval.
			r.Claim.kick()
		}
		if !r.Record.settleStep(ctx, rj, &row, stepErr, err) || next == nil {
			if next != nil {
				r.Writes.handBack(ctx, []store.Attempt{{ID: next.Job.ID, Attempt: next.Job.Attempts, WorkerID: r.WorkerID}})
			}
			r.release(rj)
			return
		}
		if rj, ctx = r.chainTo(ctx, rj, next); rj == nil {
			return
		}
		row = rj.row
		stepErr, next, err = r.Engine.RunChained(withStepJob(ctx, rj.job), next, r.Exec.decideStep)
	}
}

// settleStep records the outcome of a step attempt; false when the
// attempt was abandoned (Stop handed it back) and nothing may follow it.
func (r *recorder) settleStep(ctx context.Context, rj *running, row *store.JobRow, stepErr, err error) bool {
	if !rj.state.CompareAndSwap(stateRunning, stateDone) {
		return false // abandoned by Stop, which already handed it back
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrShutdown):
		// Stopped mid-step: nothing was settled, the attempt goes back.
		r.Writes.handBack(ctx, []store.Attempt{rj.job.attempt})
	case err != nil && errors.Is(context.Cause(ctx), ErrJobLost):
		r.Stats.refused.Add(1)
		r.Log.Warn("workflow step lost while running (rescued or deleted); its result is dropped", "job", row.ID, "err", loggedError{stepErr})
	case err != nil && ctx.Err() == nil && errors.Is(err, workflow.ErrNotStarted) &&
		(retryableRead(err) || errors.Is(err, workflow.ErrClassSettings)):
		// Nothing ran (the state read failed on the connection or timed
		// out): the attempt goes back for another try. Any other error is
		// left to the stale sweep below, which spends the attempt, so a
		// read that always fails cannot loop.
		r.Log.Warn("workflow step not started; handing it back", "job", row.ID, "err", err)
		r.Writes.handBack(ctx, []store.Attempt{rj.job.attempt})
	case err != nil && errors.Is(err, workflow.ErrNeedsPHP):
		r.leaveToPHP(ctx, rj, err)
	case err != nil:
		r.Log.Error("workflow step: recording its outcome failed; the stale sweep will deal with the job",
			"job", row.ID, "workflow", row.WorkflowID.Int64, "err", err)
	case stepErr == nil:
		r.Stats.completed.Add(1)
		r.Observe.observeJob(row, OutcomeCompleted, time.Since(rj.start))
	default:
		f := r.Decide(row, stepErr)
		if f.Terminal || workflow.IsConstraintViolation(stepErr) {
			r.Stats.buried.Add(1)
			r.Observe.observeJob(row, OutcomeBuried, time.Since(rj.start))
			r.Log.Warn("workflow step buried", "job", row.ID, "workflow", row.WorkflowID.Int64, "handler", row.Handler, "err", loggedError{stepErr})
		} else {
			r.Stats.retried.Add(1)
			r.Observe.observeJob(row, OutcomeRetried, time.Since(rj.start))
			r.Log.Info("workflow step failed; retrying", "job", row.ID, "workflow", row.WorkflowID.Int64,
				"handler", row.Handler, "in", f.RetryDelay, "err", loggedError{stepErr})
		}
	}
	return true
}

// retryableRead reports whether a failed read may succeed when simply
// tried again: a lost connection, a deadlock or lock wait, a timeout.
func retryableRead(err error) bool {
	return store.ConnectionLost(err) || store.Transient(err) || errors.Is(err, context.DeadlineExceeded)
}

// chainTo moves rj's slot to the chained step job next, which the worker
// holds from the commit that enqueued it: registered as running (so the
// heartbeat renews it and Stop waits for it or hands it back), with its
// own context. It returns nil, with next handed back, when the worker
// began stopping since that commit. ctx is rj's attempt's.
func (r *runner) chainTo(ctx context.Context, rj *running, next *engine.Chained) (*running, context.Context) {
	nrj, nctx := r.newRunning(next.Job, rj.lane, time.Now(), next.Job.Attempts)
	stopping := r.Claim.stopped()
	r.Jobs.chain(rj.row.ID, nrj, !stopping)
	rj.cancel(nil)
	if stopping {
		nrj.cancel(nil)
		r.Writes.handBack(ctx, []store.Attempt{nrj.job.attempt})
		rj.lane.free()
		return nil, nil
	}
	r.Stats.chained.Add(1)
	r.Claim.refreshPausedSoon()
	return nrj, nctx
}

// stepTimeout is a step attempt's time limit: the job's runtime payload,
// handler options or the default, as for plain jobs.
func (e *executor) stepTimeout(row *store.JobRow) (time.Duration, error) {
	payload, err := phpjson.DecodeString(row.Payload)
	if err != nil {
		payload = phpjson.Null()
	}
	d := e.policy.settings(row, payload).timeout
	return d, &TimeoutError{Seconds: int(d.Seconds())}
}

// decideStep is retryOrBury (policy.go) for a failed step attempt.
func (e *executor) decideStep(row *store.JobRow, err error) engine.Failure {
	payload, perr := phpjson.DecodeString(row.Payload)
	if perr != nil {
		payload = phpjson.Null()
	}
	bury, delay := e.policy.settings(row, payload).retryOrBury(row.Attempts, err)
	return engine.Failure{
		Message:    err.Error(),
		Class:      store.FitChars(errorClass(err), 255),
		Trace:      errorTrace(err),
		Terminal:   bury,
		RetryDelay: delay,
	}
}

// isWorkflowStep reports whether a claimed row is a workflow step the
// engine runs.
func (r *runner) isWorkflowStep(row *store.JobRow) bool {
	return r.Engine != nil && row.WorkflowID.Valid
}
