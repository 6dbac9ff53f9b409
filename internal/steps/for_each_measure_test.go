//go:build measure

package steps_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/workflow"
)

// TestMeasureForEachCompletionCost (N4) is a measurement, not a check:
// it plans for_each steps of
// 1,000, 10,000 and 100,000 items and prints what one branch completion
// costs at each size (claim, item handler, step transaction), averaged
// over 50 branches. Each completion rewrites the workflow state, which
// holds every item and every result so far (the plugin's format), so the
// cost grows with the items. It is built only with the tag measure:
//
//	go test -tags measure -count=1 -run TestMeasureForEachCompletionCost -v ./internal/steps/
func TestMeasureForEachCompletionCost(t *testing.T) {
	const completions = 50
	for _, n := range []int{1_000, 10_000, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			env := newEngineEnv(t)
			items := make([]any, n)
			for i := range items {
				items[i] = fmt.Sprintf("item-%d", i)
			}
			id := env.Dispatch(workflow.New("measure").ForEach("items", "ItemStep"), enginetest.Obj("items", items))
			ids := env.PendingOf(id)
			require.Len(t, ids, 1)
			require.NoError(t, env.RunJob(ids[0]))
			branches := env.PendingOf(id)
			require.Len(t, branches, n)
			start := time.Now()
			for _, b := range branches[:completions] {
				require.NoError(t, env.RunJob(b))
			}
			per := time.Since(start) / completions
			t.Logf("for_each of %d items: %.1f ms per branch completion (state %d bytes)", n, float64(per.Microseconds())/1000, len(env.Workflow(id).State))
		})
	}
}
