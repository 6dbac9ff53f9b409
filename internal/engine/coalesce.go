package engine

import (
	"context"
	"time"
)

// coalescer turns concurrent look-ups of rows by id into one query for
// many ids. Every step reads its workflow's state before its handler runs,
// and every workflow that ends reads who waits on it; at thousands of
// steps a second those single-row reads were a third of the server's
// statements.
//
// As with the step batcher (leaderQueue) there is no timer: a look-up
// made while fewer than coalesceLeaders queries run queries at once;
// look-ups made meanwhile queue up and the next query takes them all. An
// idle engine therefore reads a row as before, with no added latency.
type coalescer[V any] struct {
	fetch func(ctx context.Context, ids []int64) (map[int64]V, error)
	q     leaderQueue[*lookup[V]]
	// timeout bounds one query (coalesceTimeout unless set).
	timeout time.Duration
}

// coalesceLeaders is how many queries of one kind run at once, and
// coalesceMax how many ids one query takes.
const (
	coalesceLeaders = 2
	coalesceMax     = 256
	coalesceTimeout = 30 * time.Second
)

type lookup[V any] struct {
	ctx   context.Context
	id    int64
	value V
	found bool
	err   error
	done  chan struct{}
}

func newCoalescer[V any](fetch func(ctx context.Context, ids []int64) (map[int64]V, error)) *coalescer[V] {
	return &coalescer[V]{fetch: fetch, timeout: coalesceTimeout}
}

// get returns the row of id, found false when there is none.
func (c *coalescer[V]) get(ctx context.Context, id int64) (V, bool, error) {
	l := &lookup[V]{ctx: ctx, id: id, done: make(chan struct{})}
	if c.q.push(l, coalesceLeaders) {
		for batch := c.q.take(coalesceMax); len(batch) > 0; batch = c.q.take(coalesceMax) {
			c.run(batch)
		}
	}
	select {
	case <-l.done:
		return l.value, l.found, l.err
	case <-ctx.Done():
		var zero V
		return zero, false, ctx.Err()
	}
}

func (c *coalescer[V]) run(batch []*lookup[V]) {
	ids := make([]int64, 0, len(batch))
	live := batch[:0:0]
	for _, l := range batch {
		if err := l.ctx.Err(); err != nil {
			l.err = err
			close(l.done)
			continue
		}
		ids = append(ids, l.id)
		live = append(live, l)
	}
	if len(live) == 0 {
		return
	}
	// Not under any one caller's context: one caller giving up must not
	// fail the others' look-ups; bounded, so a hung connection cannot
	// keep the leader (a step of its own) forever.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), c.timeout)
	defer cancel()
	rows, err := c.fetch(ctx, ids)
	for _, l := range live {
		if err != nil {
			l.err = err
		} else {
			l.value, l.found = rows[l.id]
		}
		close(l.done)
	}
}
