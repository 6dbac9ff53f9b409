package engine

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The hooks the engine's white-box tests (package engine_test, which may
// import internal/steps for the kinds) reach the engine's insides by.
// This file is part of the test binary only.

// The batch tests force batches instead of hoping for them: every leader
// slot is marked taken, so the steps the goroutines submit queue up; once
// all of them are queued the test goroutine leads, and the queue is run in
// batches of StepBatch. Nothing depends on timing.

func (b *stepBatcher) hold() {
	b.q.mu.Lock()
	b.q.leaders = stepBatchLeaders
	b.q.mu.Unlock()
}

// leadWhenQueued waits until n bodies are queued (or every runner has
// returned, so a runner that failed before queueing cannot hang the test),
// then runs the queue as the only leader.
func (b *stepBatcher) leadWhenQueued(e *Engine, n int, finished func() bool) {
	for {
		b.q.mu.Lock()
		q := len(b.q.queue)
		b.q.mu.Unlock()
		if q >= n || finished() {
			break
		}
		runtime.Gosched()
	}
	b.q.mu.Lock()
	b.q.leaders = 1
	b.q.mu.Unlock()
	b.lead(e)
}

// HoldBatch marks every leader slot of the step batcher taken.
func (e *Engine) HoldBatch() { e.batch.hold() }

// LeadBatchWhenQueued runs the batch queue as its only leader once n
// bodies are queued.
func (e *Engine) LeadBatchWhenQueued(n int, finished func() bool) {
	e.batch.leadWhenQueued(e, n, finished)
}

// SetStepBatch is EngineConfig.StepBatch after construction.
func (e *Engine) SetStepBatch(n int) { e.stepBatch = n }

// BatchCount and BatchBodies are the batcher's counts of transactions and
// of the bodies they ran.
func (e *Engine) BatchCount() int64  { return e.batch.batches.Load() }
func (e *Engine) BatchBodies() int64 { return e.batch.bodies.Load() }

// SetBatchBodyHook runs fn before each batched body (a failure injected
// for workflow id).
func (e *Engine) SetBatchBodyHook(fn func(int64) error) { e.batch.bodyHook = fn }

// FailStateReads makes every read of a step's workflow state fail with err.
func (e *Engine) FailStateReads(err error) {
	e.states = newCoalescer(func(context.Context, []int64) (map[int64]store.DependencyRow, error) { return nil, err })
}

// NewTestRun is a claimed placeholder run of job, started from state.
func NewTestRun(e *Engine, job *store.JobRow, state *workflow.State) *Run {
	return &Run{e: e, job: job, state: state, trace: &jobTrace{}}
}

// AdvanceJob settles job with out as the worker's advance does, its trace
// built from state.
func (e *Engine) AdvanceJob(ctx context.Context, job *store.JobRow, out *phpjson.Object, state *workflow.State) error {
	return e.advance(ctx, job, out, e.newJobTrace(state, job), 0)
}

// AfterTerminal is what a transaction that made workflows terminal runs
// after its commit.
func (e *Engine) AfterTerminal(ctx context.Context, ids ...int64) { e.afterTerminal(ctx, ids...) }

// ReconcileWaiter re-evaluates workflowID waiting at step, as the
// sweeper does, returning the workflows it made terminal.
func (e *Engine) ReconcileWaiter(ctx context.Context, workflowID int64, step int) ([]int64, error) {
	return e.reconcileWaiter(ctx, workflowID, step, 0, "")
}

// SetLocalRuntime makes the engine run local activities in process for
// owner; DropLocalRuntime sends them through the claim.
func (e *Engine) SetLocalRuntime(owner string, lease time.Duration, logger *slog.Logger) {
	e.local = &localRuntime{Owner: owner, Lease: lease, Logger: logger}
}
func (e *Engine) DropLocalRuntime() { e.local = nil }

// BackoffAfter is a local policy's delay before the attempt after n.
var BackoffAfter = backoffAfter

// MsgAdvancedBefore is the message of a job its workflow moved past.
const MsgAdvancedBefore = msgAdvancedBefore
