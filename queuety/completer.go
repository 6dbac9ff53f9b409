package queuety

import (
	"context"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// maxCompletionBatch bounds one write of completions (statement size).
const maxCompletionBatch = 1024

// completer writes successful completions in batches: whatever has
// arrived while the previous batch was being written goes in the next. It
// is a service of its own phase: Stop, after the last attempt finished,
// writes everything left.
type completer struct {
	completerParams
	in   chan store.Completion
	stop chan struct{}
	done chan struct{} // closed once the last batch is written
}

// completerParams are what the completer writes with and whom it tells.
type completerParams struct {
	Writer completionWriter
	// Jobs holds the attempts settling until their completion is written.
	Jobs *runningSet
	// Finished counts attempts leaving the worker (Drained); it is called
	// before they leave Jobs.
	Finished func()
	// AfterBatch runs after each batch written (the memory sample the next
	// completions' log rows carry).
	AfterBatch func()
	// Size is how many completions may wait (Config.Concurrency).
	Size int
}

// completionWriter writes a batch of completions, burying a row the server
// will not take and giving up on a lost connection: either way the batch
// is settled after it returns.
type completionWriter interface {
	writeCompletions(ctx context.Context, batch []store.Completion)
}

func newCompleter(p completerParams) *completer {
	return &completer{completerParams: p, in: make(chan store.Completion, p.Size), stop: make(chan struct{}), done: make(chan struct{})}
}

// complete queues the completion of a settling attempt. After Stop it
// settles it unwritten and returns false: the stale sweep has the job.
func (c *completer) complete(done store.Completion) bool {
	select {
	case c.in <- done:
		return true
	case <-c.done:
		c.settled([]store.Completion{done})
		return false
	}
}

// Start runs the loop until Stop; ctx gives the writes its values, not
// their life. It never fails.
func (c *completer) Start(ctx context.Context) error {
	go c.loop(ctx)
	return nil
}

// Stop writes what is queued and waits for it.
func (c *completer) Stop() {
	close(c.stop)
	<-c.done
}

func (c *completer) loop(ctx context.Context) {
	defer close(c.done)
	batch := make([]store.Completion, 0, maxCompletionBatch)
	for {
		select {
		case first := <-c.in:
			batch = c.drain(append(batch, first), cap(batch))
			c.flush(ctx, batch)
			batch = batch[:0]
			c.AfterBatch()
		case <-c.stop:
			c.flush(ctx, c.drain(batch, -1))
			return
		}
	}
}

// drain adds what is queued to batch, up to limit entries (-1: all).
func (c *completer) drain(batch []store.Completion, limit int) []store.Completion {
	for limit < 0 || len(batch) < limit {
		select {
		case next := <-c.in:
			batch = append(batch, next)
		default:
			return batch
		}
	}
	return batch
}

func (c *completer) flush(ctx context.Context, batch []store.Completion) {
	if len(batch) == 0 {
		return
	}
	defer c.settled(batch)
	c.Writer.writeCompletions(ctx, batch)
}

// settled ends the heartbeats of finished attempts whose completions were
// written (or given up on: then the stale sweep has them).
func (c *completer) settled(batch []store.Completion) {
	c.Finished() // before they leave settling: see Drained
	c.Jobs.settled(batch)
}

// writeCompletions writes a batch of completions. A batch the server
// refuses (not a lost connection or a deadlock, which persist retries) is
// split and written again in halves, so one row it will not take is found
// and buried alone and never holds back the others.
func (r *recorder) writeCompletions(ctx context.Context, batch []store.Completion) {
	var res store.CompleteResult
	err := r.Writes.persist(ctx, "complete", func(ctx context.Context) error {
		var err error
		res, err = r.Store.CompleteJobs(ctx, batch)
		return err
	})
	switch {
	case err == nil:
	case retryableWrite(err):
		r.Log.Error("writing completions failed; the stale sweep will recover the jobs", "jobs", len(batch), "err", err)
		return
	case len(batch) > 1:
		r.writeCompletions(ctx, batch[:len(batch)/2])
		r.writeCompletions(ctx, batch[len(batch)/2:])
		return
	default:
		c := batch[0]
		r.Log.Error("the server refused this job's completion; burying it", "job", c.ID, "err", err)
		row := &store.JobRow{ID: c.ID, Queue: c.Log.Queue, Handler: c.Log.Handler, Attempts: c.Attempt.Attempt,
			WorkflowID: c.Log.WorkflowID, StepIndex: c.Log.StepIndex}
		d := time.Duration(c.Log.DurationMS.Int64) * time.Millisecond
		if _, err := r.Writes.writeFailure(ctx, refusedWrite(row, c.Attempt, d, "its completion", err, "")); err != nil {
			r.Log.Error("burying it failed too; the stale sweep will recover the job", "job", c.ID, "err", err)
		} else {
			r.Observe.observeJob(row, OutcomeBuried, d)
		}
		r.Stats.buried.Add(1)
		return
	}
	r.Stats.completed.Add(int64(len(res.Completed) + len(res.Already)))
	r.notifyCompleted(batch, res)
	if len(res.Refused) > 0 {
		r.Stats.refused.Add(int64(len(res.Refused)))
		r.Log.Warn("completions refused: those attempts no longer hold their rows (rescued or deleted)", "jobs", res.Refused)
	}
}
