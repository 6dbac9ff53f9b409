package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/throwable"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Decide turns a failed attempt of a claimed job into the worker's
// decision (retry after backoff or bury), applying the job's max attempts
// and backoff rules.
type Decide func(job *store.JobRow, err error) Failure

// Run runs one claimed workflow job (status processing, attempts already
// counted) and settles it, as Worker::process_job does for workflow steps:
// the `started` log and step_started event, the handler or placeholder,
// then the step-completion transaction; on failure the step_failed event
// and a retry or burial (decide says which) with the workflow failing
// when the step cannot continue. It returns the step's error, if any,
// after recording it; only a failure to record it is fatal for the job.
//
// Run never chains the next step (chain.go); a worker uses RunStep.
func (e *Engine) Run(ctx context.Context, job *store.JobRow, decide Decide) (stepErr error, err error) {
	stepErr, _, err = e.run(ctx, job, nil, -1, decide)
	return stepErr, err
}

// run is Run, RunStep and RunChained: state is the state a chained job
// starts from (nil: read it), depth the chained steps before it (-1: none
// may follow).
func (e *Engine) run(ctx context.Context, job *store.JobRow, state *workflow.State, depth int, decide Decide) (stepErr error, next *Chained, err error) {
	start := time.Now()
	if !job.WorkflowID.Valid || !job.StepIndex.Valid {
		return nil, nil, fmt.Errorf("workflow: job %d is not a workflow step", job.ID)
	}
	// notRun is why the handler is not run and the attempt fails: the
	// stored state cannot be read, so the step can never complete (it
	// fails for good at once and its workflow then fails), or PHP refused
	// a step class's settings (retried as any failure).
	var notRun error
	if state == nil {
		state = workflow.NewState(nil)
		if wf, found, gerr := e.states.get(ctx, job.WorkflowID.Int64); gerr != nil {
			return nil, nil, fmt.Errorf("%w: reading workflow %d: %w", workflow.ErrNotStarted, job.WorkflowID.Int64, gerr)
		} else if found {
			if s, perr := workflow.ParseStateString(wf.State); perr == nil {
				state = s
			} else {
				notRun = fmt.Errorf("workflow %d: %w", job.WorkflowID.Int64, perr)
			}
		}
	}
	st, hasStep := state.Step(int(job.StepIndex.Int64))
	if hasStep {
		if k, own := e.Kind(st.Type()).(OwnJobs); own {
			return nil, nil, k.RunClaimed(ctx, e, job)
		}
	}
	var admission Admission
	if k, ok := e.kinds.byPlaceholder[job.Handler]; ok && notRun == nil {
		admission = k.Admit(ctx, &AdmitParams{Engine: e, Job: job, State: state, Step: st, HasStep: hasStep})
		if admission.Refuse != nil {
			return nil, nil, admission.Refuse
		}
	}
	if notRun == nil {
		// Before the handler runs: a step whose next job cannot be written
		// with its class's settings waits, handed back, rather than run
		// and then lose them. A class PHP answers with an exception (it
		// cannot load it) fails the attempt instead, handler not run, as
		// the plugin's dispatch of it would throw: handing it back would
		// only ask again at once.
		if err := e.readClassSettings(ctx, state); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				notRun = err
			} else {
				return nil, nil, fmt.Errorf("%w: %w", workflow.ErrNotStarted, err)
			}
		}
	}
	var overLimit error
	if notRun == nil {
		overLimit = admission.Fail
	}
	traced := state
	if overLimit != nil {
		// The events of a step refused for its size carry no state
		// snapshot: the state is what is too big, and the five copies the
		// step_started and step_failed events hold would not fit in one
		// statement (max_allowed_packet).
		traced = workflow.NewState(nil)
	}
	tr := e.newJobTrace(traced, job)
	tr.chainOK, tr.depth = depth >= 0, depth
	if err := e.prepareStart(job, tr); err != nil {
		return nil, nil, err
	}
	if stepErr = cmp.Or(notRun, overLimit); stepErr == nil {
		stepErr = e.execute(ctx, job, state, tr, start)
	}
	if stepErr == nil {
		return nil, tr.next, nil
	}
	if ctx.Err() != nil && errors.Is(stepErr, ctx.Err()) {
		return stepErr, nil, ctx.Err() // shutting down: the caller hands the job back
	}
	f := decide(job, stepErr)
	if workflow.IsConstraintViolation(stepErr) || errors.Is(stepErr, workflow.ErrCorruptState) {
		f.Terminal = true
	}
	return stepErr, nil, e.stepFailed(ctx, job, state, tr, f, time.Since(start))
}

// prepareStart builds the `started` log and the step_started event; the
// job's first transaction writes them, before its own rows.
func (e *Engine) prepareStart(job *store.JobRow, tr *jobTrace) error {
	l := store.LogFor(job, store.EventStarted)
	l.Attempt = store.Int(int64(job.Attempts))
	ev, err := newEvent(job.WorkflowID.Int64, job, int(job.StepIndex.Int64), tr, job.Handler, workflow.EventStepStarted).
		input(tr.input).before(tr.public).context(tr.context).build()
	if err != nil {
		return err
	}
	tr.startLog, tr.startEvent = &l, &ev
	return nil
}

// execute runs the job's handler or placeholder and settles the step.
func (e *Engine) execute(ctx context.Context, job *store.JobRow, state *workflow.State, tr *jobTrace, start time.Time) error {
	if k, ok := e.kinds.byPlaceholder[job.Handler]; ok {
		return k.RunPlaceholder(ctx, &Run{e: e, job: job, state: state, trace: tr, start: start})
	}
	index := int(job.StepIndex.Int64)
	if workflow.IsPlaceholderHandler(job.Handler) {
		return runtimeErrorf("Placeholder %s is not implemented by queuety-go yet.", job.Handler)
	}
	out, err := e.callHandler(ctx, job, state, index)
	if err != nil {
		return err
	}
	return e.advance(ctx, job, out, tr, time.Since(start))
}

// callHandler runs the Go step handler of the job's class with a copy of
// the full state: an item handler for a for_each branch when one is
// registered, else the step handler; a class with neither goes to the
// StepRunner, when there is one.
func (e *Engine) callHandler(ctx context.Context, job *store.JobRow, state *workflow.State, index int) (out *phpjson.Object, err error) {
	defer throwable.Catch(&err)
	if e.host != nil {
		if limit, cause := e.host.StepTimeout(job); limit > 0 {
			outer := ctx
			var runner any // a class the StepRunner runs starts its limit itself (time_limit.go)
			if _, ok := e.handlers.LookupStep(job.Handler); !ok {
				runner = e.runner
			}
			tctx, cancel := workflow.LimitFor(ctx, runner, limit, cause)
			defer cancel()
			defer func() {
				if err != nil && tctx.Err() != nil && outer.Err() == nil {
					err = context.Cause(tctx)
				}
			}()
			ctx = tctx
		}
	}
	e.prefetchMetadata(state, index)
	input := workflow.NewState(phpjson.CloneObject(state.Object()))
	if step, ok := state.Step(index); ok {
		if fn, ok := e.handlers.LookupItem(job.Handler); ok {
			if item, isBranch := e.stepItem(step, job.Payload); isBranch {
				out, err = fn(ctx, input, item.Item, item.Index)
				return orEmpty(out), err
			}
		}
	}
	fn, ok := e.handlers.LookupStep(job.Handler)
	if !ok && e.runner != nil {
		return e.runFallback(ctx, job, input, index)
	}
	if !ok {
		return nil, fmt.Errorf("Handler not found: %s", job.Handler) //nolint:staticcheck // Queuety's message
	}
	out, err = fn(ctx, input)
	return orEmpty(out), err
}

func orEmpty(o *phpjson.Object) *phpjson.Object {
	if o == nil {
		return phpjson.NewObject()
	}
	return o
}

func noString() sql.NullString { return sql.NullString{} }
