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
		a, f := env.research("a"), env.failing()
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a, f)), nil)
		env.runOf(w)
		env.runOf(f)
		wf := env.workflow(w)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, "Workflow wait could not be satisfied.", wf.ErrorMessage.String)
		require.Empty(t, env.waitJSON(w))
		require.Empty(t, env.deps(w))
		require.Equal(t, []string{"workflow_started", "started", "completed", "workflow_failed"}, env.logEvents(w))
	})
	t.Run("all fails on a cancelled dependency", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a := env.research("a")
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a)), nil)
		env.runOf(w)
		_, err := env.db.Exec("UPDATE `"+env.s.Tables()["workflows"]+"` SET status = 'cancelled' WHERE id = ?", a)
		require.NoError(t, err)
		env.e.AfterTerminal(env.ctx, a) // what cancel() runs after its commit
		require.Equal(t, "failed", env.workflow(w).Status)
	})
	t.Run("any waits while one is active", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f1, f2, a := env.failing(), env.failing(), env.research("a")
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(f1, f2, a), workflow.WaitAny), nil)
		env.runOf(w)
		env.runOf(f1)
		env.runOf(f2)
		require.Equal(t, "waiting_for_workflows", env.workflow(w).Status)
		env.runOf(a)
		require.Equal(t, "completed", env.workflow(w).Status)
	})
	t.Run("any fails when all failed", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f1, f2 := env.failing(), env.failing()
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(f1, f2), workflow.WaitAny), nil)
		env.runOf(w)
		env.runOf(f1)
		require.Equal(t, "waiting_for_workflows", env.workflow(w).Status)
		env.runOf(f2)
		require.Equal(t, "failed", env.workflow(w).Status)
	})
	t.Run("quorum fails when it can no longer be reached", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, f1, f2 := env.research("a"), env.failing(), env.failing()
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a, f1, f2), workflow.WaitQuorum, workflow.Quorum(2)), nil)
		env.runOf(w)
		env.runOf(f1)
		require.Equal(t, "waiting_for_workflows", env.workflow(w).Status, "2 of 3 can still complete")
		env.runOf(f2)
		require.Equal(t, "failed", env.workflow(w).Status)
	})
	t.Run("a missing dependency is impossible", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		w := env.dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(999999)), nil)
		env.runOf(w)
		require.Equal(t, "failed", env.workflow(w).Status)
	})
	t.Run("the failure cascades to the waiter's own waiters", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		f := env.failing()
		w1 := env.dispatch(workflow.New("w1").WaitForWorkflow(workflow.WorkflowIDs(f)), nil)
		env.runOf(w1)
		w2 := env.dispatch(workflow.New("w2").WaitForWorkflow(workflow.WorkflowIDs(w1)), nil)
		env.runOf(w2)
		env.runOf(f)
		require.Equal(t, "failed", env.workflow(w1).Status)
		require.Equal(t, "failed", env.workflow(w2).Status)
	})
}

// A dependency that completes while the waiter parks is not lost: the
// placeholder re-evaluates once its dependency rows are committed.
func TestEngineWaitParkRace(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	a := env.research("a")
	w := env.dispatch(workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(a)), nil)
	// The interleaving itself (the dependency commits after the
	// placeholder's read and reconciles before its commit) cannot be
	// forced from here; what closes it is the placeholder's second,
	// post-commit evaluation, checked directly: park, complete the
	// dependency without a wake-up, re-evaluate.
	env.runOf(w)
	_, err := env.db.Exec("UPDATE `"+env.s.Tables()["workflows"]+"` SET status = 'completed' WHERE id = ?", a)
	require.NoError(t, err)
	terminal, err := env.e.ReconcileWaiter(env.ctx, w, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{w}, terminal)
	require.Equal(t, "completed", env.workflow(w).Status)
}
