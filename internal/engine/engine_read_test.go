package engine_test

import (
	"errors"
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
	id := env.dispatch(workflow.New("w").Then("IncStep"), obj("n", 1))
	boom := errors.New("connection reset")
	env.e.FailStateReads(boom)
	jobID := env.pendingJobs()[0]
	job, ok, err := env.s.ClaimJobByID(env.ctx, jobID, "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	stepErr, next, err := env.e.RunStep(env.ctx, job, decide)
	require.NoError(t, stepErr)
	require.Nil(t, next)
	require.ErrorIs(t, err, workflow.ErrNotStarted)
	require.ErrorIs(t, err, boom)
	require.Equal(t, 0, env.workflow(id).CurrentStep)
	require.Empty(t, env.logEvents(id)[1:], "nothing but workflow_started")
	require.Empty(t, env.wfEvents(id))
}
