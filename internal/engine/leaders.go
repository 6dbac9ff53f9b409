package engine

import (
	"slices"
	"sync"
)

// leaderQueue is the bookkeeping the step batcher and the coalescer share:
// requests queue up, and one made while fewer than max leaders run makes
// its caller a leader, which takes batches off the queue until it is
// empty. There is no timer and no goroutine of its own: an idle engine
// serves a lone request at once, and under load the requests that queue
// behind a running batch form the next one.
type leaderQueue[T any] struct {
	mu      sync.Mutex
	queue   []T
	leaders int
}

// push queues r and reports whether the caller must lead (call take until
// it returns nothing).
func (q *leaderQueue[T]) push(r T, max int) (lead bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue = append(q.queue, r)
	lead = q.leaders < max
	if lead {
		q.leaders++
	}
	return lead
}

// take removes up to n queued requests for a leader; none means the queue
// is empty and the caller no longer leads.
func (q *leaderQueue[T]) take(n int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(len(q.queue), max(1, n))
	if n == 0 {
		q.leaders--
		return nil
	}
	batch := slices.Clone(q.queue[:n])
	q.queue = slices.Delete(q.queue, 0, n)
	return batch
}
