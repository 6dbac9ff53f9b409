package engine_test

import (
	"errors"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/workflow"
	"github.com/stretchr/testify/require"
	"testing"
)

// A step whose state cannot be read ends before its handler with
// ErrNotStarted, and nothing of it is written: its worker hands the job
// back instead of leaving it to the stale sweep.
func TestStateReadFailureIsNotStarted(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("w").Then("IncStep"), enginetest.Obj("n", 1))
	boom := errors.New("connection reset")
	env.Engine.FailStateReads(boom)
	jobID := env.PendingJobs()[0]
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), jobID, "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	stepErr, next, err := env.Engine.RunStep(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, stepErr)
	require.Nil(t, next)
	require.ErrorIs(t, err, workflow.ErrNotStarted)
	require.ErrorIs(t, err, boom)
	require.Equal(t, 0, env.Workflow(id).CurrentStep)
	require.Empty(t, env.LogEvents(id)[1:], "nothing but workflow_started")
	require.Empty(t, env.WorkflowEvents(id))
}
