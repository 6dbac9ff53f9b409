// Package fairshare divides a fixed number of slots between members
// fairly. A member takes what is free while nobody waits; once slots are
// short, each slot given back goes to the waiting member that holds the
// fewest for its weight (weighted max-min fairness), so a member with a
// long backlog keeps its share and no more while others wait, and none
// waits behind it. The many-sites daemon shares its budget of job slots
// between the sites with work this way (queuety.SitesConfig.MaxSlots).
package fairshare

import (
	"context"
	"sync"
)

// Budget is a number of slots shared by its members.
type Budget struct {
	mu   sync.Mutex
	size int
	free int
	// waiting are the members' pending Acquires in arrival order: between
	// two that hold as much for their weight, the one waiting longer goes
	// first.
	waiting []*waiter
}

// Member is one claimant of a Budget. Its fair share is the budget times
// its weight over the weights of the members that want slots.
type Member struct {
	b      *Budget
	weight int
	held   int // guarded by b.mu
}

// waiter is one Acquire waiting for slots.
type waiter struct {
	m         *Member
	want, got int
	// granted is closed once got > 0 and the waiter left the queue.
	granted chan struct{}
}

// New returns a budget of size slots (at least 1).
func New(size int) *Budget {
	size = max(size, 1)
	return &Budget{size: size, free: size}
}

// inUse is how many slots the members hold.
func (b *Budget) inUse() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.free
}

// Join adds a member of weight (below 1: 1).
func (b *Budget) Join(weight int) *Member {
	return &Member{b: b, weight: max(weight, 1)}
}

// Acquire takes between 1 and want slots and returns how many: what is
// free at once when nobody waits, else it waits for its turn and takes
// what it is given then (never more than want). It fails only when ctx
// ends first, holding nothing. A nil Member is no budget: it returns want.
func (m *Member) Acquire(ctx context.Context, want int) (int, error) {
	if m == nil || want <= 0 {
		return max(want, 0), nil
	}
	b := m.b
	b.mu.Lock()
	if b.free > 0 { // slots are free only while nobody waits (grant)
		got := min(want, b.free)
		b.free -= got
		m.held += got
		b.mu.Unlock()
		return got, nil
	}
	w := &waiter{m: m, want: want, granted: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()
	select {
	case <-w.granted:
		return w.got, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.granted: // given slots as ctx ended: hand them on
		b.give(m, w.got)
	default:
		for i, o := range b.waiting {
			if o == w {
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				break
			}
		}
	}
	return 0, ctx.Err()
}

// Release gives back n of the member's slots; they go to the members
// waiting, the neediest first. A nil Member does nothing.
func (m *Member) Release(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	m.b.give(m, n)
}

// heldSlots is how many slots the member holds.
func (m *Member) heldSlots() int {
	if m == nil {
		return 0
	}
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	return m.held
}

// give takes n slots back from m and grants the free ones.
func (b *Budget) give(m *Member, n int) {
	n = min(n, m.held) // more than it holds would grow the budget
	m.held -= n
	b.free += n
	b.grant()
}

// grant hands the free slots to the waiters one at a time, each to the
// neediest (the fewest held for its weight; the longest waiting among
// equals), then wakes every waiter given any: it claims with what it got
// rather than waiting for the rest of what it asked.
func (b *Budget) grant() {
	for b.free > 0 && len(b.waiting) > 0 {
		var next *waiter
		for _, w := range b.waiting {
			if w.got == w.want {
				continue
			}
			// w needs more than next when w.held/w.weight < next.held/next.weight.
			if next == nil || w.m.held*next.m.weight < next.m.held*w.m.weight {
				next = w
			}
		}
		if next == nil {
			break // every waiter has what it asked
		}
		next.got++
		next.m.held++
		b.free--
	}
	kept := b.waiting[:0]
	for _, w := range b.waiting {
		if w.got > 0 {
			close(w.granted)
			continue
		}
		kept = append(kept, w)
	}
	clear(b.waiting[len(kept):])
	b.waiting = kept
}
