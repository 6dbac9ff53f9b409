package store

import (
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func (e *testEnv) countJobsOf(workflowID int64) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.Get(&n, render("SELECT COUNT(*) FROM {jobs} WHERE workflow_id = ?", e.tables), workflowID))
	return n
}

func (e *testEnv) countLogsOf(workflowID int64) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.Get(&n, render("SELECT COUNT(*) FROM {logs} WHERE workflow_id = ?", e.tables), workflowID))
	return n
}

// batchBody locks a workflow, writes a job row (a real INSERT) and a
// buffered log row for it, then returns fail.
func batchBody(id int64, fail error) func(*WorkflowTx) error {
	return func(w *WorkflowTx) error {
		if _, err := w.LockWorkflow(id); err != nil {
			return err
		}
		if err := w.InsertStepJobs(id, []StepJob{{Queue: "q", Handler: "H", Payload: []byte(`{}`), StepIndex: 1}}); err != nil {
			return err
		}
		if err := w.InsertLogs(WorkflowLog(id, "wf", "q", EventWorkflowCompleted)); err != nil {
			return err
		}
		return fail
	}
}

// A failing body is rolled back to its savepoint alone, its buffered log
// rows dropped; the others commit with their logs.
func TestWorkflowTxBatchFailingBodyAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := make([]int64, 4)
	for i := range ids {
		ids[i] = e.insertWorkflow(InsertWorkflow{})
	}
	boom := errors.New("boom")
	errs, err := e.s.WorkflowTxBatch(e.ctx, []func(*WorkflowTx) error{
		batchBody(ids[0], nil), batchBody(ids[1], boom), batchBody(ids[2], nil), batchBody(ids[3], boom),
	})
	require.NoError(t, err)
	require.Equal(t, []error{nil, boom, nil, boom}, errs)
	for i, id := range ids {
		want := 1 - i%2
		require.Equal(t, want, e.countJobsOf(id), "workflow %d", i)
		require.Equal(t, want+1, e.countLogsOf(id), "workflow %d: workflow_started and its own", i) // +workflow_started
	}
}

// A deadlock reported by a body aborts the batch as a whole: InnoDB may
// have rolled back the whole transaction, the bodies before it included,
// so ErrBatchAborted says every body must run again, and nothing of any
// body is written. (Injected: which transaction InnoDB picks as a real
// deadlock's victim is up to its weights, so such a test was flaky.)
func TestWorkflowTxBatchDeadlockAbortsAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w1, w2, w3 := e.insertWorkflow(InsertWorkflow{}), e.insertWorkflow(InsertWorkflow{}), e.insertWorkflow(InsertWorkflow{})
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock (injected)"}
	boom := errors.New("boom")
	errs, err := e.s.WorkflowTxBatch(e.ctx, []func(*WorkflowTx) error{
		batchBody(w1, nil), batchBody(w2, boom), batchBody(w3, deadlock),
	})
	require.Nil(t, errs)
	require.ErrorIs(t, err, ErrBatchAborted)
	require.True(t, Transient(err), "%v", err)
	for _, id := range []int64{w1, w2, w3} {
		require.Zero(t, e.countJobsOf(id))
		require.Equal(t, 1, e.countLogsOf(id), "workflow_started only")
	}
}
