package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// localSchema compiles a $defs entry of local-activity-runtime.schema.json
// (a copy of durable-workflow's contract file in testdata).
func localSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../../workflow/testdata/local-activity-runtime.schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	const url = "https://queuety.test/local-activity-runtime.schema.json"
	require.NoError(t, c.AddResource(url, doc))
	sch, err := c.Compile(url + "#/$defs/" + def)
	require.NoError(t, err)
	return sch
}

func validateJSON(t *testing.T, sch *jsonschema.Schema, b []byte) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	require.NoError(t, sch.Validate(v), string(b))
}

// What a local activity stores validates against durable-workflow's
// contract: the options snapshot, the execution's activity_options marker,
// every event's history marker and every history event name.
func TestLocalActivityRecordsMatchTheContract(t *testing.T) {
	t.Parallel()
	env := newLocalEnv(t)
	env.step(t, "SendReceiptActivity", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		return enginetest.Obj("receipt", "r-1"), engine.ActivityHeartbeat(ctx, map[string]any{"message": "Polling remote job"})
	})
	id := env.Dispatch(workflow.New("order").Then("IncStep").
		LocalActivity("SendReceiptActivity", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{1, 2}, StartToCloseTimeout: 10,
			ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5, NonRetryableErrorTypes: []string{"PaymentDeclined"}}), enginetest.Obj("n", 0))
	env.claimAndRun()
	x := env.executions(id)[0]

	validateJSON(t, localSchema(t, "localActivityOptionsSnapshot"), []byte(x.ActivityOptions))
	validateJSON(t, localSchema(t, "activityOptionsMarker"), []byte(x.ActivityOptions))
	marker, names := localSchema(t, "localActivityHistoryMarker"), localSchema(t, "localActivityHistoryEventName")
	for _, ev := range history(t, x) {
		b, err := json.Marshal(ev.Context)
		require.NoError(t, err)
		validateJSON(t, marker, b)
		validateJSON(t, names, []byte(`"`+ev.Event+`"`))
	}
	for _, ev := range env.jobEvents(x.JobID) {
		b, err := json.Marshal(ev.Context)
		require.NoError(t, err)
		validateJSON(t, marker, b)
	}
	// A snapshot with a routing key is what the contract forbids, and what
	// the builder never writes.
	bad := `{"execution_mode":"local","queue_bypassed":true,"routing":"same_process_workflow_task","queue":"imports"}`
	var v any
	require.NoError(t, json.Unmarshal([]byte(bad), &v))
	require.Error(t, localSchema(t, "localActivityOptionsSnapshot").Validate(v))
}
