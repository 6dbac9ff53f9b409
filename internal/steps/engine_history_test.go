package steps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// TestStateAtReadsTheLastCompletionAsPHP: StateAt is the state_after of
// the step's newest step_completed or workflow_resumed event (other events
// ignored), keeps the string keys only as PHP's array filter does, reads
// an empty array as an empty state, and is nil for a step with none.
func TestStateAtReadsTheLastCompletionAsPHP(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	for _, ev := range []struct {
		step       int
		event, out string
	}{
		{0, "step_completed", `{"n":1}`},
		{0, "step_completed", `{"n":2,"0":"int key","x":[1]}`},
		{0, "step_started", `{"n":99}`},
		{1, "workflow_resumed", `[]`},
		{2, "step_failed", `{"n":5}`},
	} {
		_, err := env.DB.Exec("INSERT INTO `wp_queuety_workflow_events` (workflow_id, step_index, handler, event, state_after) VALUES (7, ?, 'S', ?, ?)",
			ev.step, ev.event, ev.out)
		require.NoError(t, err)
	}
	got, err := env.Engine.StateAt(env.Ctx(), 7, 0)
	require.NoError(t, err)
	b, err := phpjson.Encode(phpjson.ObjectValue(got))
	require.NoError(t, err)
	require.JSONEq(t, `{"n":2,"x":[1]}`, string(b))

	got, err = env.Engine.StateAt(env.Ctx(), 7, 1)
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Zero(t, got.Len())

	for _, step := range []int{2, 3} {
		got, err = env.Engine.StateAt(env.Ctx(), 7, step)
		require.NoError(t, err)
		require.Nil(t, got, "step %d", step)
	}
}
