package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	store "github.com/queuety-go/queuety/sql"
)

// Group commit of step transactions.
//
// A step's completion is about ten short statements in its own
// transaction, and at a few hundred steps a second the daemon and the
// server spend their time on round trips and commits, not on the rows
// (docs/compat.md, "Performance notes"). So the engine runs the step
// transactions that goroutines submit at the same time in one database
// transaction (store.WorkflowTxBatch): one BEGIN and COMMIT, their
// workflows and jobs locked with one SELECT each, and their writes (the
// states, the completed jobs, the next jobs, the log rows, the events)
// sent as one multi-row statement each; a body that fails is undone alone.
//
// There is no committer goroutine and no timer. A goroutine that submits
// a body while fewer than stepBatchLeaders batches are running becomes a
// leader: it takes up to StepBatch queued bodies (its own among them),
// runs them, hands each its result, and goes on while bodies are queued
// (leaderQueue). Bodies submitted while every leader is busy wait for the
// next batch, so batches grow with the load and an idle engine runs a
// lone step at once, on the single-step path.

// DefaultStepBatch is the default EngineConfig.StepBatch.
const DefaultStepBatch = 128

// stepBatchLeaders is how many batches run at once. One would serialize
// all steps on one connection (its bodies' statements are still one round
// trip each); a few keep the server's cores busy while bounding the lock
// conflicts between batches.
const stepBatchLeaders = 4

type stepBatcher struct {
	q leaderQueue[*batchReq]
	// batches and bodies count the shared transactions run and the
	// bodies in them (not the single-step ones), for tests and profiling.
	batches, bodies atomic.Int64
	// bodyHook, tests only, runs before each body inside a shared
	// transaction; an error it returns is that body's.
	bodyHook func(key int64) error
}

type batchReq struct {
	ctx context.Context
	// key is the workflow the body locks first, job the job it locks next
	// (0: none); the batch locks them for all its bodies up front.
	key, job int64
	fn       func(*store.WorkflowTx) error
	err      error
	redo     bool // the batch rolled back (or panicked): the caller runs fn on its own
	done     chan struct{}
}

// run runs fn in a batch, or on its own when the batch it was in rolled
// back as a whole (the retry is the single-step path: WorkflowTx, with its
// own deadlock retries).
func (b *stepBatcher) run(ctx context.Context, e *Engine, key, job int64, fn func(*store.WorkflowTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &batchReq{ctx: ctx, key: key, job: job, fn: fn, done: make(chan struct{})}
	if b.q.push(r, stepBatchLeaders) {
		b.lead(e)
	}
	<-r.done
	if r.redo {
		return e.store.WorkflowTx(ctx, fn)
	}
	return r.err
}

// lead runs batches until the queue is empty. The leader's own request
// is in the first batch or a later one; it returns only once the queue is
// drained, so no queued request is left without a leader.
func (b *stepBatcher) lead(e *Engine) {
	for batch := b.q.take(e.stepBatch); len(batch) > 0; batch = b.q.take(e.stepBatch) {
		b.runBatch(e, batch)
	}
}

func (b *stepBatcher) runBatch(e *Engine, batch []*batchReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	// A request whose caller gave up (shutdown, lost job) is not run: the
	// caller sees its context's error, as the single-step path would.
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		// Alone: the single-step path, run by the leader, which keeps its
		// slot meanwhile; that busy slot is what lets the next steps queue
		// up into a batch. A panic is handed to the body's own goroutine.
		r := live[0]
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.err, r.redo = nil, true
				}
			}()
			r.err = e.store.WorkflowTx(r.ctx, r.fn)
		}()
		return
	}
	// Lock in workflow id order (each body locks its workflow first), so
	// two batches running at once take their main locks in the same order
	// and rarely deadlock. Equal keys keep their arrival order.
	slices.SortStableFunc(live, func(x, y *batchReq) int {
		switch {
		case x.key < y.key:
			return -1
		case x.key > y.key:
			return 1
		}
		return 0
	})
	fns := make([]store.BatchBody, len(live))
	for i, r := range live {
		fns[i] = store.BatchBody{WorkflowID: r.key, JobID: r.job, Fn: r.fn}
		if h := b.bodyHook; h != nil {
			fn, key := r.fn, r.key
			fns[i].Fn = func(tx *store.WorkflowTx) error {
				if err := h(key); err != nil {
					return err
				}
				return fn(tx)
			}
		}
	}
	b.batches.Add(1)
	b.bodies.Add(int64(len(fns)))
	// The statements do not run under any one caller's context: one
	// caller's cancellation must not roll back the others' steps.
	errs, err := func() (errs []error, err error) {
		// A body that panics must not leave the others believing they
		// committed: the batch is rolled back and each body runs again on
		// its own, where the panic happens again, in its caller, as on the
		// single-step path.
		defer func() {
			if p := recover(); p != nil {
				errs, err = nil, fmt.Errorf("%w: panic in a batched step: %v", store.ErrBatchAborted, p)
			}
		}()
		return e.store.WorkflowTxBatch(context.WithoutCancel(live[0].ctx), fns)
	}()
	switch {
	case err == nil:
		for i, r := range live {
			r.err = errs[i]
		}
	case errors.Is(err, store.ErrBatchAborted):
		for _, r := range live {
			r.redo = true
		}
	default:
		for _, r := range live {
			r.err = err
		}
	}
}
