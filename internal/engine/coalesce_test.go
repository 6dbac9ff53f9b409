package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Concurrent look-ups share queries, and each gets its own row.
func TestCoalescerSharesQueries(t *testing.T) {
	t.Parallel()
	var queries, asked atomic.Int64
	release := make(chan struct{})
	c := newCoalescer(func(_ context.Context, ids []int64) (map[int64]string, error) {
		if queries.Add(1) <= coalesceLeaders {
			<-release // the first queries are slow: the others queue behind them
		}
		asked.Add(int64(len(ids)))
		out := map[int64]string{}
		for _, id := range ids {
			if id%10 != 0 { // ids ending in 0 do not exist
				out[id] = "row " + string(rune('a'+id%26))
			}
		}
		return out, nil
	})
	const n = 200
	var wg sync.WaitGroup
	got := make([]string, n)
	found := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			v, ok, err := c.get(t.Context(), int64(i))
			require.NoError(t, err)
			got[i], found[i] = v, ok
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for i := range n {
		require.Equal(t, i%10 != 0, found[i], "id %d", i)
		if found[i] {
			require.Equal(t, "row "+string(rune('a'+i%26)), got[i])
		}
	}
	require.EqualValues(t, n, asked.Load(), "every id asked once")
	require.LessOrEqual(t, queries.Load(), int64(2*coalesceLeaders), "look-ups made while the queries ran shared the next ones")
}

// A failed query fails the look-ups it carried, not later ones; a caller
// that gives up gets its context's error.
func TestCoalescerErrorsAndCancellation(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	fail := atomic.Bool{}
	fail.Store(true)
	c := newCoalescer(func(_ context.Context, ids []int64) (map[int64]int, error) {
		if fail.Load() {
			return nil, boom
		}
		return map[int64]int{ids[0]: 7}, nil
	})
	_, _, err := c.get(t.Context(), 1)
	require.ErrorIs(t, err, boom)
	fail.Store(false)
	v, ok, err := c.get(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 7, v)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = c.get(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
}
