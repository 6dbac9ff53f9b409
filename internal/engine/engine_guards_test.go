package engine_test

import (
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
	"github.com/stretchr/testify/require"
	"testing"
)

// Guards A, B and C of advance_step, and pause.
func TestEngineGuardsAndPause(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	wft := env.Store.Tables()["workflows"]

	// Paused: the step completes and advances, nothing is enqueued.
	id := env.Dispatch(workflow.New("p").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	_, err := env.DB.Exec("UPDATE `"+wft+"` SET status = 'paused' WHERE id = ?", id)
	require.NoError(t, err)
	env.Drain(2)
	require.Equal(t, 1, env.Workflow(id).CurrentStep)
	require.Equal(t, "paused", env.Workflow(id).Status)
	require.Len(t, env.Jobs(id), 1)

	// Guard A: the workflow failed meanwhile; the job is buried.
	id = env.Dispatch(workflow.New("a").Then("IncStep"), enginetest.Obj("n", 0))
	jobs := env.Jobs(id)
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), jobs[0].ID, "w")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = env.DB.Exec("UPDATE `"+wft+"` SET status = 'failed' WHERE id = ?", id)
	require.NoError(t, err)
	stepErr, err := env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, err)
	require.NoError(t, stepErr)
	jobs = env.Jobs(id)
	require.Equal(t, store.StatusBuried, jobs[0].Status)
	require.Equal(t, engine.MsgAdvancedBefore, jobs[0].ErrorMessage.String)

	// Guard C: the workflow moved to another step; the job is buried.
	id = env.Dispatch(workflow.New("c").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	jobs = env.Jobs(id)
	job, _, err = env.Store.ClaimJobByID(env.Ctx(), jobs[0].ID, "w")
	require.NoError(t, err)
	_, err = env.DB.Exec("UPDATE `"+wft+"` SET current_step = 1 WHERE id = ?", id)
	require.NoError(t, err)
	_, err = env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, err)
	require.Equal(t, store.StatusBuried, env.Jobs(id)[0].Status)
	require.Equal(t, `{"n":0}`, env.PublicJSON(id))

	// Guard B: settling a job twice is a no-op.
	id = env.Dispatch(workflow.New("b").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	jobs = env.Jobs(id)
	job, _, err = env.Store.ClaimJobByID(env.Ctx(), jobs[0].ID, "w")
	require.NoError(t, err)
	_, err = env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, err)
	require.NoError(t, env.Engine.AdvanceJob(env.Ctx(), job, enginetest.Obj("n", 99), env.State(id)))
	require.Equal(t, `{"n":1}`, env.PublicJSON(id))
	require.Len(t, env.Jobs(id), 2)
}
