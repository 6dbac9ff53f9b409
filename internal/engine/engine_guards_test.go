package engine_test

import (
	"github.com/queuety-go/queuety/internal/engine"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
	"github.com/stretchr/testify/require"
	"testing"
)

// Guards A, B and C of advance_step, and pause.
func TestEngineGuardsAndPause(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	wft := env.s.Tables()["workflows"]

	// Paused: the step completes and advances, nothing is enqueued.
	id := env.dispatch(workflow.New("p").Then("IncStep").Then("IncStep"), obj("n", 0))
	_, err := env.db.Exec("UPDATE `"+wft+"` SET status = 'paused' WHERE id = ?", id)
	require.NoError(t, err)
	env.drain(2)
	require.Equal(t, 1, env.workflow(id).CurrentStep)
	require.Equal(t, "paused", env.workflow(id).Status)
	require.Len(t, env.jobs(id), 1)

	// Guard A: the workflow failed meanwhile; the job is buried.
	id = env.dispatch(workflow.New("a").Then("IncStep"), obj("n", 0))
	jobs := env.jobs(id)
	job, ok, err := env.s.ClaimJobByID(env.ctx, jobs[0].ID, "w")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = env.db.Exec("UPDATE `"+wft+"` SET status = 'failed' WHERE id = ?", id)
	require.NoError(t, err)
	stepErr, err := env.e.Run(env.ctx, job, decide)
	require.NoError(t, err)
	require.NoError(t, stepErr)
	jobs = env.jobs(id)
	require.Equal(t, store.StatusBuried, jobs[0].Status)
	require.Equal(t, engine.MsgAdvancedBefore, jobs[0].ErrorMessage.String)

	// Guard C: the workflow moved to another step; the job is buried.
	id = env.dispatch(workflow.New("c").Then("IncStep").Then("IncStep"), obj("n", 0))
	jobs = env.jobs(id)
	job, _, err = env.s.ClaimJobByID(env.ctx, jobs[0].ID, "w")
	require.NoError(t, err)
	_, err = env.db.Exec("UPDATE `"+wft+"` SET current_step = 1 WHERE id = ?", id)
	require.NoError(t, err)
	_, err = env.e.Run(env.ctx, job, decide)
	require.NoError(t, err)
	require.Equal(t, store.StatusBuried, env.jobs(id)[0].Status)
	require.Equal(t, `{"n":0}`, env.publicJSON(id))

	// Guard B: settling a job twice is a no-op.
	id = env.dispatch(workflow.New("b").Then("IncStep").Then("IncStep"), obj("n", 0))
	jobs = env.jobs(id)
	job, _, err = env.s.ClaimJobByID(env.ctx, jobs[0].ID, "w")
	require.NoError(t, err)
	_, err = env.e.Run(env.ctx, job, decide)
	require.NoError(t, err)
	require.NoError(t, env.e.AdvanceJob(env.ctx, job, obj("n", 99), env.state(id)))
	require.Equal(t, `{"n":1}`, env.publicJSON(id))
	require.Len(t, env.jobs(id), 2)
}
