package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// TestWorkerFailsCorruptWorkflow: a real worker claims the step of a
// workflow whose state is not JSON; the attempt fails for good, the job
// is buried and the workflow ends failed with the reason instead of
// running for ever (its failure used to end in "recording its outcome
// failed").
func TestWorkerFailsCorruptWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
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
	j := jobRowOf(t, c, id)
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, 1, j.Attempts, "buried at its first attempt")
}

func jobRowOf(t *testing.T, c *Client, workflowID int64) store.JobRow {
	t.Helper()
	var j store.JobRow
	require.NoError(t, c.store.DB().Unsafe().Get(&j, "SELECT * FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ?", workflowID))
	return j
}
