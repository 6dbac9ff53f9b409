package steps_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// run_workflow: Queuety's RunWorkflowTest (spec §12).

func (env *engineEnv) childOf(parent int64) *store.WorkflowRow {
	env.T.Helper()
	var id int64
	require.NoError(env.T, env.DB.Get(&id, "SELECT MAX(id) FROM `"+env.Store.Tables()["workflows"]+"` WHERE parent_workflow_id = ?", parent))
	return env.Workflow(id)
}

func TestEngineRunWorkflow(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	sub := workflow.New("sub").Then("IncStep").Then("IncStep")
	p := env.Dispatch(workflow.New("outer").Then("IncStep").RunWorkflow("sub", sub).Then("IncStep"), enginetest.Obj("n", 0))
	env.RunNext(2) // IncStep, the run_workflow placeholder
	jobs := env.Jobs(p)
	require.Len(t, jobs, 2)
	require.Equal(t, workflow.HandlerRunWorkflow, jobs[1].Handler)
	require.Equal(t, store.StatusCompleted, jobs[1].Status)
	wf := env.Workflow(p)
	require.Equal(t, "running", wf.Status, "the parent stays running at the step")
	require.Equal(t, 1, wf.CurrentStep)
	require.Empty(t, env.PendingOf(p))

	child := env.childOf(p)
	require.Equal(t, p, child.ParentWorkflowID.Int64)
	require.Equal(t, int64(1), child.ParentStepIndex.Int64)
	require.Equal(t, `{"n":1}`, env.PublicJSON(child.ID))

	env.RunOf(child.ID)
	require.Equal(t, "completed", env.Workflow(child.ID).Status)
	wf = env.Workflow(p)
	require.Equal(t, 2, wf.CurrentStep, "the child's completion moves the parent on")
	require.Equal(t, `{"n":3}`, env.PublicJSON(p), "the child's state is merged into the parent's")
	env.RunOf(p)
	require.Equal(t, "completed", env.Workflow(p).Status)
	require.Equal(t, `{"n":4}`, env.PublicJSON(p))
}

func TestEngineRunWorkflowLastStepAndNesting(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	inner := workflow.New("inner").Then("IncStep")
	middle := workflow.New("middle").RunWorkflow("inner", inner)
	p := env.Dispatch(workflow.New("outer").RunWorkflow("middle", middle), enginetest.Obj("n", 0))
	waiter := env.Dispatch(workflow.New("waiter").WaitForWorkflow(workflow.WorkflowIDs(p), workflow.ResultKey("outer")), nil)
	env.RunOf(waiter)
	env.RunOf(p)
	m := env.childOf(p)
	env.RunOf(m.ID)
	in := env.childOf(m.ID)
	env.RunOf(in.ID)
	for _, id := range []int64{in.ID, m.ID, p, waiter} {
		require.Equal(t, "completed", env.Workflow(id).Status, "workflow %d", id)
	}
	require.Equal(t, `{"n":1}`, env.PublicJSON(p))
	require.Equal(t, `{"outer":{"n":1}}`, env.PublicJSON(waiter), "a parent completed by its child wakes its own waiters")
}

// A failed (or cancelled) child fails its parent, where the plugin leaves
// the parent waiting at the step for ever (docs/compat.md).
func TestEngineRunWorkflowChildFailure(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	p := env.Dispatch(workflow.New("outer").RunWorkflow("sub", workflow.New("sub").Then("FailingStep")).Then("IncStep"), enginetest.Obj("label", "x"))
	env.RunOf(p)
	child := env.childOf(p)
	env.RunOf(child.ID)
	require.Equal(t, "failed", env.Workflow(child.ID).Status)
	wf := env.Workflow(p)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Child workflow "+itoa(int(child.ID))+" failed: step failed on purpose", wf.ErrorMessage.String)

	// A child failed by a process that did not wake the parent (PHP): the
	// sweeper fails the parent.
	p2 := env.Dispatch(workflow.New("outer").RunWorkflow("sub", workflow.New("sub").Then("IncStep")), enginetest.Obj("n", 0))
	env.RunOf(p2)
	c2 := env.childOf(p2)
	_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET status = 'cancelled' WHERE id = ?", c2.ID)
	require.NoError(t, err)
	res, err := env.Engine.SweepWaiting(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, 1, res.Settled)
	wf = env.Workflow(p2)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Child workflow "+itoa(int(c2.ID))+" was cancelled.", wf.ErrorMessage.String)
}

// The sweeper resumes a parent whose completed child's wake-up was lost,
// and leaves alone a parent whose newest child still runs.
func TestEngineSweepRunWorkflowParents(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	p := env.Dispatch(workflow.New("outer").RunWorkflow("sub", workflow.New("sub").Then("IncStep")), enginetest.Obj("n", 0))
	env.RunOf(p)
	c := env.childOf(p)
	res, err := env.Engine.SweepWaiting(env.Ctx())
	require.NoError(t, err)
	require.Zero(t, res.Settled)
	_, err = env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET status = 'completed', state = '{\"n\":9}' WHERE id = ?", c.ID)
	require.NoError(t, err)
	_, err = env.Engine.SweepWaiting(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, "completed", env.Workflow(p).Status)
	require.Equal(t, `{"n":9}`, env.PublicJSON(p))
}
