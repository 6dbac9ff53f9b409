package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// TestWorkerFailsCorruptWorkflow: a real worker runs the step of a
// workflow whose state is not JSON; each attempt fails, the last is
// buried, and the workflow ends failed with the reason instead of
// running for ever (the failure used to be "recording its outcome
// failed").
func TestWorkerFailsCorruptWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Workflows = true
		cfg.Backoff = Backoff{List: []int{0}}
	})
	reg := workflowRegistry(t)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("corrupt").Then("IncStep").Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["workflows"]+"` SET state = 'not json{' WHERE id = ?", id)
	require.NoError(t, err)

	startWorker(t, c, reg)
	waitFor(t, 15*time.Second, "workflow failed", func() bool { return workflowRow(t, c, id).Status == "failed" })
	wf := workflowRow(t, c, id)
	require.Contains(t, wf.ErrorMessage.String, "state is not valid JSON")
	require.Equal(t, "not json{", wf.State)
	var status string
	require.NoError(t, c.store.DB().Get(&status, "SELECT status FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ?", id))
	require.Equal(t, store.StatusBuried, status)
}
