package queuety

import (
	"context"

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
	// The batch grows with what arrives (at most about Concurrency at a
	// time), not to maxCompletionBatch up front: that was a quarter MiB a
	// worker, idle or not, and with many sites a worker each.
	var batch []store.Completion
	for {
		select {
		case first := <-c.in:
			batch = c.drain(append(batch, first), maxCompletionBatch)
			c.flush(ctx, batch)
			// Written: its log rows (messages, traces) need not stay live
			// until the next batch overwrites them.
			clear(batch)
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
