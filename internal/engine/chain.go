package engine

import (
	"bytes"
	"context"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Chained steps.
//
// When a step completes and the workflow's next step is an ordinary Go
// step this worker would claim anyway, the transaction that enqueues it
// writes its job already claimed by the worker (processing, attempts 1,
// reserved_by and reserved_at set, as the claim would leave it), and the
// worker runs it right after the commit, in the same slot, on the state it
// just wrote. The rows end exactly as if the job had been claimed a moment
// after it was enqueued; what is saved is the claim (a locking SELECT, an
// UPDATE and a commit), the state read and the wait for the next claim
// round. It is Temporal's eager dispatch, applied to Queuety's model.
//
// A step is chained only when nothing the claim would check can differ:
// a single step (not parallel, for_each, a wait or a local activity) with
// a Go handler here or a class the StepRunner runs (a PHP class in the
// pool), no delay, no concurrency group, no worker session, on a queue the
// worker serves and that is not paused, while the worker still
// takes work (Host.Chains). EngineConfig.ChainSteps bounds how many steps
// one claim runs in a row, so a long workflow gives its slot back to the
// queue now and then and jobs waiting there are not starved.

// DefaultChainSteps is queuety's default EngineConfig.ChainSteps.
const DefaultChainSteps = 8

// chainRuntime lets a worker run the workflow steps it enqueues; NewEngine
// builds it from EngineConfig.Host and ChainSteps.
type chainRuntime struct {
	// Owner is the worker's reserved_by value.
	Owner string
	// Accept reports whether the worker would claim a job of handler on
	// queue now (it serves the queue, the queue is not paused, the worker
	// is not stopping).
	Accept func(queue, handler string) bool
	// Max is how many steps may follow one claimed step; 0 disables
	// chaining.
	Max int
}

// Chained is a step job a completed step enqueued already claimed for the
// worker that ran it, with the state it starts from. The worker runs it
// with RunChained, or hands it back like any claimed job.
type Chained struct {
	Job   store.JobRow
	state *workflow.State
	depth int
	id    *int64 // the row's id, known once the enqueuing transaction sent it
}

// RunStep runs a claimed workflow step job as Run does and also returns
// the next step's job when the step's completion chained it: the caller
// now holds that job and must run it (RunChained) or hand it back.
func (e *Engine) RunStep(ctx context.Context, job *store.JobRow, decide Decide) (stepErr error, next *Chained, err error) {
	return e.run(ctx, job, nil, 0, decide)
}

// RunChained runs a chained step job (see RunStep).
func (e *Engine) RunChained(ctx context.Context, c *Chained, decide Decide) (stepErr error, next *Chained, err error) {
	return e.run(ctx, &c.Job, c.state, c.depth, decide)
}

// chainable reports whether the job enqueued for step may be chained by
// this transaction.
func (a *Advance) chainable(ctx context.Context, step workflow.Step, job workflow.StepJob) bool {
	r := a.e.chain
	if r == nil || r.Owner == "" || !a.trace.chainOK || a.trace.depth >= r.Max || ctx.Err() != nil {
		return false
	}
	if !chains(a.e.Kind(step.Type())) || job.DelaySeconds > 0 || job.ConcurrencyGroup != "" || job.SessionID != "" {
		return false
	}
	if bytes.Contains(job.Payload, []byte(`"rate_limit"`)) {
		return false // the claim applies the rate limit
	}
	// A class without a Go handler is run by the StepRunner (the PHP pool)
	// when there is one, as the claim would hand it there.
	if _, ok := a.e.handlers.LookupStep(job.Handler); !ok && (a.e.runner == nil || workflow.IsPlaceholderHandler(job.Handler)) {
		return false
	}
	return r.Accept == nil || r.Accept(job.Queue, job.Handler)
}

// enqueueChained writes the job of step index claimed for the worker and
// records it as the transaction's chained step.
func (a *Advance) enqueueChained(job workflow.StepJob, index int) error {
	// The step starts from the state as stored, as a claimed one would:
	// PHP's JSON does not round-trip every value (an object keyed 0…n-1
	// reads back as a list, 2.0 as 2).
	state, err := workflow.ParseState(a.written)
	if err != nil {
		// Not chained then: the claim reads and reports the state.
		return a.tx.InsertStepJobs(a.wf.ID, storeJobs([]workflow.StepJob{job}))
	}
	sj := storeJobs([]workflow.StepJob{job})[0]
	id, err := a.tx.InsertChainedStepJob(a.wf.ID, sj, a.e.chain.Owner)
	if err != nil {
		return err
	}
	a.chained = &Chained{
		Job: store.JobRow{
			Queue: sj.Queue, Handler: sj.Handler, Payload: string(sj.Payload), Priority: sj.Priority,
			Status: store.StatusProcessing, Attempts: 1, MaxAttempts: sj.MaxAttempts,
			WorkflowID: store.Int(a.wf.ID), StepIndex: store.Int(int64(index)), CostUnits: int64(sj.CostUnits),
			ReservedBy: store.String(a.e.chain.Owner),
		},
		state: state,
		depth: a.trace.depth + 1,
		id:    id,
	}
	return nil
}

// committed completes a chained step once its transaction committed.
func (c *Chained) committed() *Chained {
	if c == nil {
		return nil
	}
	c.Job.ID = *c.id
	return c
}
