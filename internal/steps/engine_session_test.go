package steps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/workflow"
)

// TestWorkerSessionJobsCarrySession runs a session workflow through the
// engine against MariaDB: every handler job of a bound step (the single
// step's, each for_each item's, each parallel branch's) carries the
// session id and the normalized snapshot; unbound and placeholder jobs
// carry NULL.
func TestWorkerSessionJobsCarrySession(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	b := workflow.New("gpu").OnQueue("wf").Then("IncStep")
	gpu := b.WorkerSession("gpu-render", workflow.WorkerSessionOptions{Queue: "gpu-activities", Requirements: []string{"gpu:l4"}, TTLSeconds: 600})
	gpu.ForEach("items", "ItemStep").Then("IncStep").Parallel("BranchA", "BranchB")
	b.Then("IncStep")
	id := env.Dispatch(b, enginetest.Obj("n", 0, "items", []any{"a", "b"}))

	const snapshot = `{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:l4"],"lease_seconds":120,"ttl_seconds":600,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`
	type row struct{ handler, queue, session, ws string }
	rowsOf := func() []row {
		var out []row
		for _, j := range env.Jobs(id) {
			out = append(out, row{j.Handler, j.Queue, j.SessionID.String, j.WorkerSession.String})
			require.Equal(t, j.SessionID.Valid, j.WorkerSession.Valid, "job %d: both session columns or neither", j.ID)
		}
		return out
	}
	env.Drain(20)
	require.Equal(t, string(workflow.StatusCompleted), string(env.Workflow(id).Status))
	require.Equal(t, []row{
		{"IncStep", "wf", "", ""},
		{workflow.HandlerForEach, "wf", "", ""},
		{"ItemStep", "gpu-activities", "gpu-render", snapshot},
		{"ItemStep", "gpu-activities", "gpu-render", snapshot},
		{"IncStep", "gpu-activities", "gpu-render", snapshot},
		{"BranchA", "gpu-activities", "gpu-render", snapshot},
		{"BranchB", "gpu-activities", "gpu-render", snapshot},
		{"IncStep", "wf", "", ""},
	}, rowsOf())
}
