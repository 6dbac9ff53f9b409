package steps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/steps"
	"github.com/queuety-go/queuety/workflow"
)

// The engine's placeholder list is derived from the kinds, and the model
// writes a step's first job without the engine: for every placeholder
// kind the model's job is the kind's placeholder, so a job the model
// enqueues is one an engine given All() runs.
func TestPlaceholdersMatchTheModel(t *testing.T) {
	t.Parallel()
	kinds := steps.All()
	var placeholders []string
	for _, k := range kinds {
		p, ok := k.(engine.Placeholder)
		if !ok {
			continue
		}
		placeholders = append(placeholders, p.Placeholder())
		step, err := workflow.ParseStep(phpjson.ObjectValue(phpjson.NewObject().Set("type", phpjson.String(string(k.Type())))))
		require.NoError(t, err)
		jobs, err := workflow.StepJobs(step, 0, workflow.DispatchDefaults{}, nil)
		require.NoError(t, err, k.Type())
		require.Len(t, jobs, 1, k.Type())
		require.Equal(t, p.Placeholder(), jobs[0].Handler, k.Type())
		require.True(t, workflow.IsPlaceholderHandler(p.Placeholder()), k.Type())
	}
	require.Equal(t, placeholders, engine.Placeholders(kinds))
	require.Len(t, placeholders, 7, "delay, repeat, for_each, the two waits, start_workflows, run_workflow")
}
