package engine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// A local step's outcome is written without reading the workflow again,
// fenced on the row its attempt started from. When another writer changed
// the row meanwhile (here the state, as a signal or an operator would),
// the fence fails and the outcome is merged into the row as it is now:
// nothing the other writer wrote is lost, and the chain goes on.
func TestLocalActivityOutcomeMergesIntoAStateWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	var calls atomic.Int64
	env.step(t, "Meanwhile", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		if calls.Add(1) == 1 {
			env.DB.MustExec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET state = JSON_SET(state, '$.outside', 7) WHERE name = ?", "meanwhile")
		}
		return enginetest.Obj("r", true), nil
	})
	id := env.Dispatch(workflow.New("meanwhile").LocalActivity("IncStep", workflow.LocalActivityOptions{}).
		LocalActivity("Meanwhile", workflow.LocalActivityOptions{}).LocalActivity("IncStep", workflow.LocalActivityOptions{}), enginetest.Obj("n", 0))
	env.claimAndRun()
	require.EqualValues(t, 1, env.claims.Load())
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":2,"outside":7,"r":true}`, env.PublicJSON(id))
	require.EqualValues(t, 1, calls.Load())
	for _, x := range env.executions(id) {
		require.Equal(t, store.ActivityCompleted, x.Status)
		require.EqualValues(t, 1, x.AttemptCount)
	}
	for _, a := range env.attempts(id) {
		require.Equal(t, store.AttemptCompleted, a.Status)
	}
}

// The same when the step is the workflow's last: its fences are checked
// at the commit (nothing after them needs an answer), and a failed one
// also sends the outcome down the general path instead of losing it.
func TestLocalActivityLastOutcomeMergesIntoAStateWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "LastMeanwhile", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		env.DB.MustExec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET state = JSON_SET(state, '$.outside', 7) WHERE name = ?", "last-meanwhile")
		return enginetest.Obj("r", true), nil
	})
	id := env.Dispatch(workflow.New("last-meanwhile").LocalActivity("IncStep", workflow.LocalActivityOptions{}).
		LocalActivity("LastMeanwhile", workflow.LocalActivityOptions{}), enginetest.Obj("n", 0))
	env.claimAndRun()
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":1,"outside":7,"r":true}`, env.PublicJSON(id))
	for _, x := range env.executions(id) {
		require.Equal(t, store.ActivityCompleted, x.Status)
	}
}
