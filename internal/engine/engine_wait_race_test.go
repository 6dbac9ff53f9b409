package engine_test

import (
	"github.com/queuety-go/queuety/workflow"
	"github.com/stretchr/testify/require"
	"testing"
)

// The failure rules: All fails on any failure or cancel; Any only when all
// are terminal and none succeeded; Quorum when the rest can no longer reach
// it. The waiter fails with Queuety's message and workflow_failed (job 0).
func TestEngineWaitForWorkflowsFailureRules(t *testing.T) {
	t.Parallel()
	t.Run("all fails on the first failure", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, f := env.Research("a"), env.Failing()
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a, f)), nil)
		env.RunOf(w)
		env.RunOf(f)
		wf := env.Workflow(w)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, "Workflow wait could not be satisfied.", wf.ErrorMessage.String)
		require.Empty(t, env.WaitJSON(w))
		require.Empty(t, env.Deps(w))
		require.Equal(t, []string{"workflow_started", "started", "completed", "workflow_failed"}, env.LogEvents(w))
	})
	t.Run("all fails on a cancelled dependency", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a := env.Research("a")
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a)), nil)
		env.RunOf(w)
		_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET status = 'cancelled' WHERE id = ?", a)
		require.NoError(t, err)
		env.Engine.AfterTerminal(env.Ctx(), a) // what cancel() runs after its commit
		require.Equal(t, "failed", env.Workflow(w).Status)
	})
	t.Run("any waits while one is active", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f1, f2, a := env.Failing(), env.Failing(), env.Research("a")
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(f1, f2, a), workflow.WaitAny), nil)
		env.RunOf(w)
		env.RunOf(f1)
		env.RunOf(f2)
		require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)
		env.RunOf(a)
		require.Equal(t, "completed", env.Workflow(w).Status)
	})
	t.Run("any fails when all failed", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f1, f2 := env.Failing(), env.Failing()
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(f1, f2), workflow.WaitAny), nil)
		env.RunOf(w)
		env.RunOf(f1)
		require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)
		env.RunOf(f2)
		require.Equal(t, "failed", env.Workflow(w).Status)
	})
	t.Run("quorum fails when it can no longer be reached", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, f1, f2 := env.Research("a"), env.Failing(), env.Failing()
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a, f1, f2), workflow.WaitQuorum, workflow.Quorum(2)), nil)
		env.RunOf(w)
		env.RunOf(f1)
		require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status, "2 of 3 can still complete")
		env.RunOf(f2)
		require.Equal(t, "failed", env.Workflow(w).Status)
	})
	t.Run("a missing dependency is impossible", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(999999)), nil)
		env.RunOf(w)
		require.Equal(t, "failed", env.Workflow(w).Status)
	})
	t.Run("the failure cascades to the waiter's own waiters", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f := env.Failing()
		w1 := env.Dispatch(workflow.New("w1").WaitForWorkflow(workflow.WorkflowIDs(f)), nil)
		env.RunOf(w1)
		w2 := env.Dispatch(workflow.New("w2").WaitForWorkflow(workflow.WorkflowIDs(w1)), nil)
		env.RunOf(w2)
		env.RunOf(f)
		require.Equal(t, "failed", env.Workflow(w1).Status)
		require.Equal(t, "failed", env.Workflow(w2).Status)
	})
}

// A dependency that completes while the waiter parks is not lost: the
// placeholder re-evaluates once its dependency rows are committed.
func TestEngineWaitParkRace(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	a := env.Research("a")
	w := env.Dispatch(workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(a)), nil)
	// The interleaving itself (the dependency commits after the
	// placeholder's read and reconciles before its commit) cannot be
	// forced from here; what closes it is the placeholder's second,
	// post-commit evaluation, checked directly: park, complete the
	// dependency without a wake-up, re-evaluate.
	env.RunOf(w)
	_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET status = 'completed' WHERE id = ?", a)
	require.NoError(t, err)
	terminal, err := env.Engine.ReconcileWaiter(env.Ctx(), w, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{w}, terminal)
	require.Equal(t, "completed", env.Workflow(w).Status)
}
