package phppool

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// A step request names its workflow and step, which the PHP side puts in
// the plugin's ExecutionContext; a plain job's does not.
func TestStepFramesCarryTheWorkflowAndStep(t *testing.T) {
	row := &store.JobRow{ID: 9, Queue: "q", Handler: "S", Attempts: 1, MaxAttempts: 3,
		WorkflowID: sql.NullInt64{Int64: 4, Valid: true}, StepIndex: sql.NullInt64{Int64: 0, Valid: true}}
	b, err := encodeStep(1, &stepCall{row: row, kind: "step", state: []byte(`{"a":1}`)})
	require.NoError(t, err)
	var f struct {
		Job map[string]any `json:"job"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	require.Equal(t, float64(4), f.Job["workflow_id"])
	require.Equal(t, float64(0), f.Job["step_index"], "step 0 is sent, not dropped as empty")

	row.WorkflowID, row.StepIndex = sql.NullInt64{}, sql.NullInt64{}
	f.Job = nil
	b, err = encodeStep(2, &stepCall{row: row, kind: "step", state: []byte(`[]`)})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &f))
	require.NotContains(t, f.Job, "workflow_id")
}
