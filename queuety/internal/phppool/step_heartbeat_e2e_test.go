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

// A PHP step's Heartbeat::beat() reaches its job row through the pool, as
// the plugin's worker stores a step's: the last progress in heartbeat_data.
func TestPHPStepHeartbeatIsStored(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)

	id := dispatchWorkflow(t, c, workflow.New("beats").Then("BeatStep").Then("EmptyStep"), `{}`)
	waitWorkflow(t, c, id, workflow.StatusCompleted)
	var rows []struct {
		StepIndex int     `db:"step_index"`
		Data      *string `db:"heartbeat_data"`
	}
	require.NoError(t, clientstore.Of(c).DB().SelectContext(context.Background(), &rows,
		"SELECT step_index, heartbeat_data FROM `"+clientstore.Of(c).Tables()["jobs"]+"` WHERE workflow_id = ? ORDER BY step_index", id))
	require.Len(t, rows, 2)
	require.NotNil(t, rows[0].Data, "BeatStep's heartbeat reached its row")
	require.JSONEq(t, `{"processed":2,"of":2}`, *rows[0].Data)
	require.Nil(t, rows[1].Data, "a step that does not beat leaves heartbeat_data NULL")
}
