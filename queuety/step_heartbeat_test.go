package queuety

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// stepJobID is the id of the job of a workflow's step.
func stepJobID(t *testing.T, c *Client, workflowID int64, index int) int64 {
	t.Helper()
	var id int64
	require.NoError(t, c.store.DB().Get(&id, "SELECT id FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ? AND step_index = ?", workflowID, index))
	return id
}

// A Go step's StepHeartbeat is stored on its job row as Heartbeat::beat()
// stores a step's under the plugin's worker: heartbeat_data, for the
// claimed step and for one chained after it in the same slot.
func TestGoStepHeartbeatIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	for _, name := range []string{"BeatOne", "BeatTwo"} {
		reg.RegisterStep(name, func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
			if err := StepHeartbeat(ctx, map[string]any{"step": name, "processed": 3}); err != nil {
				return nil, err
			}
			return wfObj(t, name, true), nil
		})
	}
	require.NoError(t, StepHeartbeat(ctx, map[string]any{"x": 1}), "outside a step it does nothing")
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("beats").Then("BeatOne").Then("BeatTwo"), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "workflow completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.JSONEq(t, `{"step":"BeatOne","processed":3}`, jobRow(t, c, stepJobID(t, c, id, 0)).HeartbeatData.String)
	require.JSONEq(t, `{"step":"BeatTwo","processed":3}`, jobRow(t, c, stepJobID(t, c, id, 1)).HeartbeatData.String)
}

// A step whose row another worker took gets ErrJobLost from StepHeartbeat,
// writes nothing, and its result is dropped.
func TestGoStepHeartbeatOfALostStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	got := make(chan error, 1)
	var wfID int64
	ready := make(chan struct{})
	reg.RegisterStep("Stolen", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		<-ready
		execSQL(t, c, "UPDATE {jobs} SET reserved_by = 'someone-else' WHERE workflow_id = ?", wfID)
		err := StepHeartbeat(ctx, map[string]any{"processed": 1})
		got <- err
		return wfObj(t, "stolen", true), nil
	})
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("lost").Then("Stolen"), wfObj(t)))
	require.NoError(t, err)
	wfID = id
	close(ready)
	startWorker(t, c, reg)
	select {
	case err := <-got:
		require.True(t, errors.Is(err, ErrJobLost), "got %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the step never ran")
	}
	j := jobRow(t, c, stepJobID(t, c, id, 0))
	require.False(t, j.HeartbeatData.Valid, "a lost attempt writes no heartbeat")
	require.Equal(t, "processing", j.Status, "the lost attempt's result is refused")
}
