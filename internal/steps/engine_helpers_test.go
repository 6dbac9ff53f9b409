package steps_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/steps"
)

// engineEnv is the shared engine test environment, running Queuety's step
// kinds; this package's helpers are its methods.
type engineEnv struct{ *enginetest.Env }

func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	return &engineEnv{enginetest.New(t, steps.All())}
}

// withRunner is env with an engine whose step runner is r.
func (env *engineEnv) withRunner(r engine.StepRunner) {
	env.Engine = engine.NewEngine(engine.EngineConfig{Store: env.Store, Handlers: env.Engine.Handlers(), Kinds: steps.All(), Runner: r})
}

// fixtureDir holds the plugin's recorded scenarios.
const fixtureDir = "../../testdata/queuety-plugin"

func itoa(i int) string { return strconv.Itoa(i) }

func decodeObject(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	v, err := phpjson.DecodeString(s)
	require.NoError(t, err)
	o, ok := v.AsObject()
	require.True(t, ok, "want an object, got %s", v.Kind())
	return o
}

// encodeObject is json_encode of a PHP array; encodeValue of an event
// column (null stays NULL).
func encodeObject(o *phpjson.Object) ([]byte, error) { return phpjson.Encode(phpjson.ObjectValue(o)) }

func encodeValue(v phpjson.Value) ([]byte, error) {
	if v.IsNull() {
		return nil, nil
	}
	return phpjson.Encode(v)
}

// msgAdvancedBefore is the message of a job its workflow moved past.
const msgAdvancedBefore = "Workflow advanced before job completion."

// missingStepMessage is the error of a workflow advanced to a step its
// definition lacks.
func missingStepMessage(workflowID int64, index, usable, total int) string {
	return fmt.Sprintf("Workflow %d cannot run step %d: its _steps definition has %d usable steps of total_steps %d.",
		workflowID, index, usable, total)
}
