package store

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// newPipelineEnv is newEnv whose store pipelines on conns connections.
func newPipelineEnv(t *testing.T, conns int) *testEnv {
	t.Helper()
	e := newEnv(t)
	main, pdb, err := OpenWithPipeline(e.ctx, e.dsn, 1, conns, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = main.Close(); _ = pdb.Close() })
	e.s.UsePipeline(pdb)
	return e
}

// pipelineWorkflow inserts a running workflow and returns it as stored.
func (e *testEnv) pipelineWorkflow() *WorkflowRow {
	e.t.Helper()
	res := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{\"a\":1}', 3)")
	id, err := res.LastInsertId()
	require.NoError(e.t, err)
	wf, err := e.s.GetWorkflow(e.ctx, id)
	require.NoError(e.t, err)
	return wf
}

func pipelineStepJob(step int) StepJob {
	return StepJob{Queue: "default", Handler: "PipeStep", Payload: []byte(`{}`), MaxAttempts: 3, StepIndex: step}
}

// A pipelined transaction writes what the same body writes in WorkflowTx:
// a fenced write queued, an insert whose id is used, log and event rows,
// a read that must see the queued write, all committed together; and it
// runs on a connection of the pipeline, while the main handle still
// refuses several statements in one query.
func TestPipelinedTxWritesLikeWorkflowTx(t *testing.T) {
	t.Parallel()
	e := newPipelineEnv(t, 2)
	wf := e.pipelineWorkflow()
	var jobID int64
	err := e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		require.NotNil(t, tx.pipe, "a pipeline connection was free")
		tx.AssumeWorkflow(wf)
		if err := tx.Advance(wf.ID, []byte(`{"a":2}`), 1); err != nil {
			return err
		}
		require.Len(t, tx.pipe.queued, 2, "begin and the fenced write wait for the next packet")
		var err error
		if jobID, err = tx.InsertClaimedStepJob(wf.ID, pipelineStepJob(1), "w1"); err != nil {
			return err
		}
		require.Empty(t, tx.pipe.queued)
		if err := tx.InsertLogs(WorkflowLog(wf.ID, "wf", "default", EventWorkflowStarted)); err != nil {
			return err
		}
		got, err := tx.LockWorkflow(wf.ID)
		if err != nil {
			return err
		}
		require.Equal(t, `{"a":2}`, got.State, "a read sees the writes queued before it")
		return tx.InsertEvents(WorkflowEvent{WorkflowID: wf.ID, Event: "step_started", Handler: "PipeStep"})
	})
	require.NoError(t, err)
	require.NotZero(t, jobID)
	got, err := e.s.GetWorkflow(e.ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, `{"a":2}`, got.State)
	require.Equal(t, 1, got.CurrentStep)
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {jobs} WHERE id = ? AND status = 'processing' AND reserved_by = 'w1'", jobID))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {logs} WHERE workflow_id = ?", wf.ID))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {workflow_events} WHERE workflow_id = ?", wf.ID))

	_, err = e.db.ExecContext(e.ctx, "SELECT 1; SELECT 2")
	require.Error(t, err, "the main handle's connections take one statement a query")
}

// A fence that fails in a packet fails the transaction before anything is
// committed, though the statements after it in the packet ran.
func TestPipelinedTxFailedFenceWritesNothing(t *testing.T) {
	t.Parallel()
	e := newPipelineEnv(t, 2)
	wf := e.pipelineWorkflow()
	stale := *wf
	stale.CurrentStep = 1
	err := e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(&stale)
		if err := tx.Advance(wf.ID, []byte(`{"a":2}`), 2); err != nil {
			return err
		}
		_, err := tx.InsertClaimedStepJob(wf.ID, pipelineStepJob(2), "w1")
		return err
	})
	require.ErrorIs(t, err, ErrAssumptionFailed)
	require.Zero(t, e.count("SELECT COUNT(*) FROM {jobs} WHERE workflow_id = ?", wf.ID), "the insert sent with the failed fence was rolled back")

	// The fence is checked before COMMIT when nothing after it needs an
	// answer (a workflow's last step).
	err = e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(&stale)
		if err := tx.Complete(wf.ID, []byte(`{"a":3}`), 3); err != nil {
			return err
		}
		return tx.InsertLogs(WorkflowLog(wf.ID, "wf", "default", EventWorkflowCompleted))
	})
	require.ErrorIs(t, err, ErrAssumptionFailed)
	got, err := e.s.GetWorkflow(e.ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, "running", got.Status)
	require.Zero(t, e.count("SELECT COUNT(*) FROM {logs} WHERE workflow_id = ?", wf.ID))
}

// A statement that fails in the middle of a packet stops the packet; the
// transaction is rolled back (the statements before it undone, their
// locks released) and the connection serves the next transaction.
func TestPipelinedTxFailingStatementRollsBack(t *testing.T) {
	t.Parallel()
	e := newPipelineEnv(t, 1)
	wf := e.pipelineWorkflow()
	e.exec("INSERT INTO {activity_attempts} (id, execution_id, workflow_id, job_id, attempt_number, status, started_at) VALUES ('taken', 1, 1, 1, 1, 'running', NOW())")
	err := e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(wf)
		if err := tx.Advance(wf.ID, []byte(`{"a":2}`), 1); err != nil {
			return err
		}
		// Same id as the row above: a duplicate key, after the Advance.
		if err := tx.InsertActivityAttempt(StartAttempt{AttemptID: "taken", ExecutionID: 2, WorkflowID: wf.ID, JobID: 2, AttemptNumber: 1, Now: e.clk.Now()}); err != nil {
			return err
		}
		return tx.InsertLogs(WorkflowLog(wf.ID, "wf", "default", EventWorkflowStarted))
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "insert-activity-attempt", "the error names the packet's statements")
	got, err := e.s.GetWorkflow(e.ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, 0, got.CurrentStep, "the Advance before the failing statement was rolled back")
	require.Zero(t, e.count("SELECT COUNT(*) FROM {logs} WHERE workflow_id = ?", wf.ID))

	// Nothing holds the workflow row: the main handle writes it at once.
	ctx, cancel := context.WithTimeout(e.ctx, 5e9)
	defer cancel()
	_, err = e.db.ExecContext(ctx, render("UPDATE {workflows} SET current_step = 0 WHERE id = ?", e.tables), wf.ID)
	require.NoError(t, err)
	// The one pipeline connection is usable again.
	require.NoError(t, e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		require.NotNil(t, tx.pipe)
		tx.AssumeWorkflow(wf)
		return tx.Advance(wf.ID, []byte(`{"a":5}`), 1)
	}))
	got, err = e.s.GetWorkflow(e.ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, `{"a":5}`, got.State)
}

// A body that fails discards what it queued; with every pipeline
// connection taken, a transaction runs as WorkflowTx does.
func TestPipelinedTxBodyErrorAndFallback(t *testing.T) {
	t.Parallel()
	e := newPipelineEnv(t, 1)
	wf := e.pipelineWorkflow()
	boom := errors.New("boom")
	err := e.s.PipelinedWorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(wf)
		if err := tx.Advance(wf.ID, []byte(`{"a":2}`), 1); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	got, err := e.s.GetWorkflow(e.ctx, wf.ID)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, got.State)

	other := e.pipelineWorkflow()
	require.NoError(t, e.s.PipelinedWorkflowTx(e.ctx, func(outer *WorkflowTx) error {
		require.NotNil(t, outer.pipe)
		return e.s.PipelinedWorkflowTx(e.ctx, func(inner *WorkflowTx) error {
			require.Nil(t, inner.pipe, "the one pipeline connection is taken: an ordinary transaction")
			return inner.Advance(other.ID, []byte(`{"b":1}`), 1)
		})
	}))
	got, err = e.s.GetWorkflow(e.ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, `{"b":1}`, got.State)

	// Without a pipeline, PipelinedWorkflowTx is WorkflowTx.
	plain := newEnv(t)
	require.NoError(t, plain.s.PipelinedWorkflowTx(plain.ctx, func(tx *WorkflowTx) error {
		require.Nil(t, tx.pipe)
		return nil
	}))
}

// Joining queries into one packet is safe: no named query holds a
// statement separator or a comment that would swallow the separator after
// it.
func TestNamedQueriesJoinIntoPackets(t *testing.T) {
	t.Parallel()
	tables, err := Naming{DBPrefix: "wp_"}.Resolve()
	require.NoError(t, err)
	q, err := loadQueries(tables, "")
	require.NoError(t, err)
	for name, text := range q {
		require.NotContains(t, text, ";", name)
		require.NotContains(t, text, "--", name)
		require.NotContains(t, text, "#", name)
	}
}
