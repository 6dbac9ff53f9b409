package queuety

import (
	"sync"

	store "github.com/queuety-go/queuety/sql"
)

// doneQueue holds the successful attempts whose completion is not written
// yet; the completer takes them in batches.
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

// close refuses further pushes.
func (q *doneQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// maxCompletionBatch bounds one write of completions (statement size).
const maxCompletionBatch = 1024

// completeLoop writes completions in batches: whatever arrived while the
// previous batch was being written goes in the next. At Stop it writes
// everything left.
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
