package queuety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

func TestClientSignals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := workflowRegistry(t)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("human").
		WaitForApproval().WaitForInput().WaitForDecision().Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "waiting for approval", func() bool { return workflowRow(t, c, id).Status == "waiting_for_signal" })

	require.NoError(t, c.Approve(ctx, id, map[string]any{"by": "ann"}))
	waitFor(t, 5*time.Second, "waiting for input", func() bool {
		wf := workflowRow(t, c, id)
		return wf.Status == "waiting_for_signal" && wf.CurrentStep == 1
	})
	require.NoError(t, c.SubmitInput(ctx, id, []any{"a", "b"}))
	waitFor(t, 5*time.Second, "waiting for a decision", func() bool {
		wf := workflowRow(t, c, id)
		return wf.Status == "waiting_for_signal" && wf.CurrentStep == 2
	})
	require.NoError(t, c.Reject(ctx, id, nil))
	waitFor(t, 5*time.Second, "completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, `{"n":1,"approval":{"by":"ann"},"input":["a","b"],"decision":{"outcome":"rejected","signal":"rejected","data":[]}}`,
		publicState(t, c, id))

	require.NoError(t, c.Signal(ctx, 424242, "nobody", phpjson.NewObject()), "a missing workflow is not an error")
	require.ErrorContains(t, c.Signal(ctx, id, "x", 5), "must be an array")
}

// publicState is a workflow's public state as PHP json_encode writes it.
func publicState(t *testing.T, c *Client, id int64) string {
	t.Helper()
	st, err := workflow.ParseState([]byte(workflowRow(t, c, id).State))
	require.NoError(t, err)
	b, err := phpjson.Encode(phpjson.ObjectValue(st.Public()))
	require.NoError(t, err)
	return string(b)
}
