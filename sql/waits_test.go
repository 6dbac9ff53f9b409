package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSignalRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.insertWorkflow(InsertWorkflow{})
	require.NoError(t, e.s.InsertSignal(e.ctx, wf, "a", []byte(`{"x":1}`)))
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		if err := tx.InsertSignal(wf, "b", []byte(`[]`)); err != nil {
			return err
		}
		return tx.InsertSignal(wf, "a", []byte(`{"x":2}`))
	}))
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		rows, err := tx.Signals(wf, []string{"a", "c"})
		require.NoError(t, err)
		require.Equal(t, []SignalRow{{"a", `{"x":1}`}, {"a", `{"x":2}`}}, rows)
		none, err := tx.Signals(wf, nil)
		require.Nil(t, none)
		return err
	}))

	mark, err := e.s.MaxSignalID(e.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), mark)
	ids, err := e.s.SignalWaiters(e.ctx, 0, mark)
	require.NoError(t, err)
	require.Empty(t, ids, "the workflow is not waiting for a signal")
	e.exec("UPDATE {workflows} SET status = 'waiting_for_signal' WHERE id = ?", wf)
	ids, err = e.s.SignalWaiters(e.ctx, 0, mark)
	require.NoError(t, err)
	require.Equal(t, []int64{wf}, ids)
	ids, err = e.s.SignalWaiters(e.ctx, mark, mark+10)
	require.NoError(t, err)
	require.Empty(t, ids)
}

func TestDependencyRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	waiter := e.insertWorkflow(InsertWorkflow{})
	a := e.insertWorkflow(InsertWorkflow{State: []byte(`{"a":1}`)})
	b := e.insertWorkflow(InsertWorkflow{})
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		if err := tx.StoreDependencies(waiter, 2, []int64{a, b}); err != nil {
			return err
		}
		if err := tx.StoreDependencies(waiter, 2, []int64{a, b}); err != nil { // replaces
			return err
		}
		if err := tx.MarkDependencySatisfied(waiter, 2, a); err != nil {
			return err
		}
		if err := tx.Park(waiter, StatusWaitingForWorkflows, []byte(`{"w":1}`), 2); err != nil {
			return err
		}
		rows, err := tx.WorkflowsByID([]int64{a, 999})
		require.Equal(t, map[int64]DependencyRow{a: {ID: a, Status: "running", State: `{"a":1}`}}, rows)
		if err != nil {
			return err
		}
		statuses, err := tx.WorkflowStatuses([]int64{a, b})
		require.Equal(t, map[int64]DependencyRow{a: {ID: a, Status: "running"}, b: {ID: b, Status: "running"}}, statuses)
		if err != nil {
			return err
		}
		none, err := tx.WorkflowStatuses(nil)
		require.Empty(t, none)
		return err
	}))
	var satisfied []bool
	require.NoError(t, e.db.Select(&satisfied, render("SELECT satisfied_at IS NOT NULL FROM {workflow_dependencies} ORDER BY id", e.tables)))
	require.Equal(t, []bool{true, false}, satisfied)

	facts, err := e.s.WakeFacts(e.ctx, []int64{a, b, 999})
	require.NoError(t, err)
	require.Equal(t, map[int64]WakeFacts{
		a: {Status: "running", Waiters: []Waiter{{WorkflowID: waiter, StepIndex: 2}}}, // satisfied, still listed
		b: {Status: "running", Waiters: []Waiter{{WorkflowID: waiter, StepIndex: 2}}},
	}, facts)
	parked, err := e.s.WaitingForWorkflows(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []Waiter{{WorkflowID: waiter, StepIndex: 2}}, parked)
	parked, err = e.s.WaitingForWorkflows(e.ctx, waiter, 10)
	require.NoError(t, err)
	require.Empty(t, parked)
	st, err := e.s.WorkflowStatus(e.ctx, waiter)
	require.NoError(t, err)
	require.Equal(t, StatusWaitingForWorkflows, st)
	st, err = e.s.WorkflowStatus(e.ctx, 999)
	require.NoError(t, err)
	require.Empty(t, st)
	byID, err := e.s.WorkflowsByID(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, byID)

	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		if err := tx.Resume(waiter, []byte(`{"w":2}`), 3); err != nil {
			return err
		}
		return tx.ClearDependencies(waiter, 2)
	}))
	wf, err := e.s.GetWorkflow(e.ctx, waiter)
	require.NoError(t, err)
	require.Equal(t, "running", wf.Status)
	require.Equal(t, 3, wf.CurrentStep)
	require.Equal(t, `{"w":2}`, wf.State)
	facts, err = e.s.WakeFacts(e.ctx, []int64{b})
	require.NoError(t, err)
	require.Equal(t, map[int64]WakeFacts{b: {Status: "running"}}, facts)
}

func TestChildWorkflowRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	parent := e.insertWorkflow(InsertWorkflow{})
	var child int64
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		var err error
		child, err = tx.InsertChildWorkflow(InsertWorkflow{
			Name: "sub", State: []byte(`{"n":1}`), TotalSteps: 1, Queue: "q",
			ParentWorkflowID: Int(parent), ParentStepIndex: Int(1),
			Jobs: []StepJob{{Queue: "q", Handler: "A", Payload: []byte(`{}`), MaxAttempts: 3}},
		})
		if err != nil {
			return err
		}
		p, step, err := tx.ParentOf(child)
		require.Equal(t, parent, p.Int64)
		require.Equal(t, int64(1), step.Int64)
		if err != nil {
			return err
		}
		p, _, err = tx.ParentOf(parent)
		require.False(t, p.Valid)
		return err
	}))
	facts, err := e.s.WakeFacts(e.ctx, []int64{child, parent})
	require.NoError(t, err)
	require.Equal(t, map[int64]WakeFacts{child: {Status: "running", HasParent: true}, parent: {Status: "running"}}, facts)
	var events []string
	require.NoError(t, e.db.Select(&events, render("SELECT CONCAT(event, ' ', handler, ' ', queue) FROM {logs} WHERE workflow_id = ? ORDER BY id", e.tables), child))
	require.Equal(t, []string{"workflow_started sub q"}, events)

	stuck, err := e.s.StuckRunWorkflowChildren(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Empty(t, stuck, "the child still runs and the parent is not at its step")
	e.exec("UPDATE {workflows} SET current_step = 1 WHERE id = ?", parent)
	e.exec("UPDATE {workflows} SET status = 'failed' WHERE id = ?", child)
	stuck, err = e.s.StuckRunWorkflowChildren(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{child}, stuck)
	e.exec("INSERT INTO {jobs} (queue, handler, payload, workflow_id, step_index, available_at) VALUES ('q', '__queuety_run_workflow', '{}', ?, 1, NOW())", parent)
	stuck, err = e.s.StuckRunWorkflowChildren(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Empty(t, stuck, "a parent with a job at the step is not stuck")
}
