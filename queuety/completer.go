package queuety

import (
	"errors"
	"sync"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// doneQueue holds the successful attempts whose completion is not written
// yet. Two writers take from it: the next claim, which carries them into
// its own transaction (one commit and two statements less per round), and
// the completer, which writes what no claim took within carryWait.
type doneQueue struct {
	mu     sync.Mutex
	items  []store.Completion
	closed bool
	signal chan struct{} // something was pushed
}

func newDoneQueue() *doneQueue { return &doneQueue{signal: make(chan struct{}, 1)} }

// push adds a completion; false once the completer has stopped.
func (q *doneQueue) push(c store.Completion) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, c)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
	return true
}

// take removes up to max completions, oldest first.
func (q *doneQueue) take(max int) []store.Completion {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.items))
	if n == 0 {
		return nil
	}
	out := make([]store.Completion, n)
	copy(out, q.items)
	q.items = append(q.items[:0], q.items[n:]...)
	return out
}

// putBack returns completions a claim took but could not write.
func (q *doneQueue) putBack(batch []store.Completion) {
	if len(batch) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(batch, q.items...)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// close refuses further pushes.
func (q *doneQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

const (
	// carryWait is how long a completion waits for a claim to carry it
	// before the completer writes it: about one claim round under load, and
	// the whole added latency of a completion on an idle worker.
	carryWait = 2 * time.Millisecond
	// maxCompletionBatch bounds one write of completions (statement size).
	maxCompletionBatch = 1024
)

// completeLoop writes the completions no claim carried: woken by a push,
// it gives the claims carryWait to take them, then writes the rest in
// batches. At Stop it writes everything left.
func (w *Worker) completeLoop() {
	defer close(w.completerDone)
	for {
		select {
		case <-w.done.signal:
		case <-w.completerStop:
			w.done.close()
			w.flushAll()
			return
		}
		t := time.NewTimer(carryWait)
		select {
		case <-t.C:
		case <-w.completerStop:
			t.Stop()
			w.done.close()
			w.flushAll()
			return
		}
		w.flushAll()
		w.sampleMemory()
	}
}

func (w *Worker) flushAll() {
	for b := w.done.take(maxCompletionBatch); len(b) > 0; b = w.done.take(maxCompletionBatch) {
		w.flush(b)
	}
}

func (w *Worker) flush(batch []store.Completion) {
	if len(batch) == 0 {
		return
	}
	defer w.settled(batch)
	w.writeCompletions(batch)
}

// settled ends the wait of completions that were written (or given up on,
// then the stale sweep has them).
func (w *Worker) settled(batch []store.Completion) {
	w.mu.Lock()
	for _, c := range batch {
		delete(w.settling, c.ID)
	}
	w.mu.Unlock()
	w.unwritten.Add(-int64(len(batch)))
}

// carried settles completions a claim wrote in its transaction: err is the
// claim's outcome. Written ones are counted; any other outcome puts them
// back for the completer, whose write is safe to repeat (a completion
// already applied is recognised, not logged twice), except when some
// attempt no longer held its row: then the completer's careful path sorts
// the batch out at once.
func (w *Worker) carried(batch []store.Completion, err error) {
	if len(batch) == 0 {
		return
	}
	switch {
	case err == nil:
		w.stats.completed.Add(int64(len(batch)))
		w.settled(batch)
	case errors.Is(err, store.ErrNotAllHeld):
		w.flush(batch)
	default:
		w.done.putBack(batch)
	}
}
