package steps

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// TestForEachOverLimitCountsWithoutCopying (N4): the item-limit check
// before a for_each placeholder runs counts a list of 100,000 items
// without copying it (it used to build a 100,000-key object to count it:
// half a gigabyte at 1,000,000 items), and still refuses a step over the
// limit with the message naming both.
//
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestForEachOverLimitCountsWithoutCopying(t *testing.T) {
	const n = 100_000
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`],"_steps":[{"type":"for_each","name":"each","items_key":"items","class":"Item"}]}`)
	state, err := workflow.ParseState([]byte(b.String()))
	require.NoError(t, err)
	step := state.Steps()[0]
	newEngine := func(limit int) *engine.Engine {
		return engine.NewEngine(engine.EngineConfig{Store: &store.Store{}, MaxForEachItems: limit})
	}

	under := newEngine(n)
	var checkErr error
	allocs := testing.AllocsPerRun(3, func() { checkErr = overLimit(under, state, step) })
	require.NoError(t, checkErr)
	require.Less(t, allocs, float64(100), "counting allocates nothing per item")

	err = overLimit(newEngine(n-1), state, step)
	require.ErrorContains(t, err, "For-each step 'each' has 100000 items, over this worker's limit of 99999")
	require.NoError(t, overLimit(newEngine(-1), state, step), "no limit")
}
