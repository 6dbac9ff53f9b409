package fairshare

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// acquireAsync starts an Acquire and returns where its answer arrives,
// once the budget has queued it.
func acquireAsync(t *testing.T, ctx context.Context, m *Member, want int) <-chan int {
	t.Helper()
	out := make(chan int, 1)
	queued := len(m.b.queue())
	go func() {
		n, err := m.Acquire(ctx, want)
		if err != nil {
			n = -1
		}
		out <- n
	}()
	for len(m.b.queue()) == queued {
		// Wait until the Acquire is queued: the order of arrival is what
		// breaks ties.
		select {
		case n := <-out:
			t.Fatalf("Acquire answered %d at once", n)
		default:
			runtime.Gosched()
		}
	}
	return out
}

func (b *Budget) queue() []*waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*waiter(nil), b.waiting...)
}

// TestAcquireTakesWhatIsFree: with nobody waiting a member takes up to
// what it asks of what is free; a nil member is no budget.
func TestAcquireTakesWhatIsFree(t *testing.T) {
	ctx := context.Background()
	b := New(5)
	a := b.Join(1)
	n, err := a.Acquire(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = a.Acquire(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, 2, n, "only two left")
	require.Equal(t, 5, b.inUse())
	a.Release(5)
	require.Zero(t, b.inUse())

	var none *Member
	n, err = none.Acquire(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	none.Release(7)
	require.Zero(t, none.heldSlots())
}

// TestFreedSlotsGoToTheNeediest: a member holding the whole budget gives
// its slots back one at a time while others wait; each freed slot goes to
// the waiter holding the fewest, the earliest among equals, and the
// member that held them all, asking again, waits its turn like the rest.
func TestFreedSlotsGoToTheNeediest(t *testing.T) {
	ctx := context.Background()
	b := New(4)
	big, x, y := b.Join(1), b.Join(1), b.Join(1)
	n, err := big.Acquire(ctx, 4)
	require.NoError(t, err)
	require.Equal(t, 4, n)

	gx := acquireAsync(t, ctx, x, 4)
	gy := acquireAsync(t, ctx, y, 4)
	big.Release(1)
	require.Equal(t, 1, <-gx, "x waited first")
	big.Release(1)
	require.Equal(t, 1, <-gy)

	// x and y ask again: they hold 1 each, big 2.
	gx = acquireAsync(t, ctx, x, 4)
	gy = acquireAsync(t, ctx, y, 4)
	big.Release(1)
	require.Equal(t, 1, <-gx, "x and y hold as much: x waited longer")
	big.Release(1)
	require.Equal(t, 1, <-gy, "y holds fewer than x now")
	require.Equal(t, []int{0, 2, 2}, []int{big.heldSlots(), x.heldSlots(), y.heldSlots()})

	// big asks again, then x: big holds the fewest, so it goes first.
	gbig := acquireAsync(t, ctx, big, 4)
	gx = acquireAsync(t, ctx, x, 4)
	y.Release(1)
	require.Equal(t, 1, <-gbig)
	y.Release(1)
	require.Equal(t, 1, <-gx, "the only one waiting")
	require.Equal(t, []int{1, 3, 0}, []int{big.heldSlots(), x.heldSlots(), y.heldSlots()})
	x.Release(3)
	require.Equal(t, 1, b.inUse(), "slots nobody waits for stay free")
}

// TestWeightsShareInProportion: two members waiting all the time with
// weights 1 and 3 end up holding a quarter and three quarters of the
// budget.
func TestWeightsShareInProportion(t *testing.T) {
	ctx := context.Background()
	b := New(8)
	light, heavy, first := b.Join(1), b.Join(3), b.Join(1)
	n, err := first.Acquire(ctx, 8)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	gl := acquireAsync(t, ctx, light, 8)
	gh := acquireAsync(t, ctx, heavy, 8)
	first.Release(8)
	require.Equal(t, 2, <-gl)
	require.Equal(t, 6, <-gh)
}

// TestCancelledAcquireHoldsNothing: an Acquire whose ctx ends while it
// waits leaves the queue holding nothing, and the slots freed later go to
// the others.
func TestCancelledAcquireHoldsNothing(t *testing.T) {
	b := New(1)
	a, c, d := b.Join(1), b.Join(1), b.Join(1)
	n, err := a.Acquire(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ctx, cancel := context.WithCancel(context.Background())
	gc := acquireAsync(t, ctx, c, 1)
	gd := acquireAsync(t, context.Background(), d, 1)
	cancel()
	require.Equal(t, -1, <-gc)
	require.Zero(t, c.heldSlots())
	a.Release(1)
	require.Equal(t, 1, <-gd)
	require.Equal(t, 1, b.inUse())
}

// TestConcurrentMembersNeverExceedTheBudget: 16 members, 4 goroutines
// each, acquire and release at random; at no time do they hold more than
// the budget between them, and every slot comes back.
func TestConcurrentMembersNeverExceedTheBudget(t *testing.T) {
	const size = 10
	b := New(size)
	var held, over, failed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		m := b.Join(1 + rand.IntN(3))
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 500 {
					n, err := m.Acquire(context.Background(), 1+rand.IntN(4))
					if err != nil || n < 1 {
						failed.Add(1)
						return
					}
					if held.Add(int64(n)) > size {
						over.Add(1)
					}
					held.Add(-int64(n))
					m.Release(n)
				}
			}()
		}
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "Acquires that failed or took nothing")
	require.Zero(t, over.Load(), "times the members held more than the budget")
	require.Zero(t, b.inUse())
	require.Empty(t, b.queue())
}
