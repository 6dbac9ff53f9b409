package phppool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/workflow"
)

// PHP step classes are chained like Go steps: the slot that ran a step
// runs the next one after its commit, without a claim, so a workflow of
// four PHP steps takes one claim; its rows end as a claimed run leaves them
// (every step job completed, attempts 1, the state every step wrote).
func TestPHPStepsAreChained(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	reg := queuety.NewRegistry()
	reg.SetFallback(pool)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	id := dispatchWorkflow(t, c, workflow.New("php_chain").Then("AddStep").Then("DoubleStep").Then("EmptyStep").Then("EmptyStep"), `{"n":1}`)
	st := waitWorkflow(t, c, id, workflow.StatusCompleted)
	require.Equal(t, `{"n":2,"added_by":"php","saw_steps":true,"doubled":4}`, encode(t, st.State))
	require.EqualValues(t, 1, w.Stats().Claimed, "the first step claimed, the other three chained")
	var jobs []struct {
		ID       int64  `db:"id"`
		Status   string `db:"status"`
		Attempts int    `db:"attempts"`
	}
	require.NoError(t, clientstore.Of(c).DB().Select(&jobs, "SELECT id, status, attempts FROM `"+clientstore.Of(c).Tables()["jobs"]+"` WHERE workflow_id = ? ORDER BY step_index", id))
	require.Len(t, jobs, 4)
	for _, j := range jobs {
		require.Equal(t, "completed", j.Status, "job %d", j.ID)
		require.Equal(t, 1, j.Attempts, "job %d", j.ID)
	}
}
