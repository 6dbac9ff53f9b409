package engine_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// TestLockStepReusesTheClaimedState (N4): a placeholder's transaction
// that locks a row still holding the column its job was claimed with
// works on that decode (the items are the claimed state's, not a second
// decode of a state that may be 14 MB); once the row changed, it decodes
// the row it locked.
func TestLockStepReusesTheClaimedState(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("reuse").Then("IncStep"), enginetest.Obj("items", []any{1, 2, 3}))
	claimed, err := workflow.ParseStateString(env.Workflow(id).State)
	require.NoError(t, err)
	r := engine.NewTestRun(env.Engine, &store.JobRow{}, claimed)
	claimedItems, _ := phpjson.Get(claimed.Object(), "items").AsList()

	lockedItems := func() []phpjson.Value {
		var items []phpjson.Value
		stop := errors.New("roll back")
		_, err := r.Transact(env.Ctx(), func(a *engine.Advance) error {
			_, ok, err := a.LockStep(id, 0)
			require.NoError(t, err)
			require.True(t, ok)
			items, _ = phpjson.Get(a.State().Object(), "items").AsList()
			return stop
		})
		require.ErrorIs(t, err, stop)
		return items
	}
	require.Same(t, &claimedItems[0], &lockedItems()[0], "the unchanged row is not decoded again")

	env.SetState(id, " "+env.Workflow(id).State) // the same state, another column
	got := lockedItems()
	require.Len(t, got, 3)
	require.NotSame(t, &claimedItems[0], &got[0], "a changed row is decoded")
}
