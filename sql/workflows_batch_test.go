package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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

// A real deadlock inside a batch aborts it as a whole: ErrBatchAborted,
// Transient, nothing of any body written.
func TestWorkflowTxBatchDeadlockAbortsAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w1, w2 := e.insertWorkflow(InsertWorkflow{}), e.insertWorkflow(InsertWorkflow{})

	// The other transaction locks w2 and is made heavy (many rows
	// written), so InnoDB picks the batch, the lighter one, as the victim.
	other, err := e.db.BeginTxx(e.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = other.Rollback() }()
	var sb strings.Builder
	for i := range 300 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "(%d, 'wf', 'q', 'workflow_completed')", w2)
	}
	_, err = other.ExecContext(e.ctx, render("INSERT INTO {logs} (workflow_id, handler, queue, event) VALUES ", e.tables)+sb.String())
	require.NoError(t, err)
	_, err = other.ExecContext(e.ctx, render("SELECT id FROM {workflows} WHERE id = ? FOR UPDATE", e.tables), w2)
	require.NoError(t, err)

	blocked := make(chan error, 1)
	errs, berr := e.s.WorkflowTxBatch(e.ctx, []func(*WorkflowTx) error{
		batchBody(w1, nil),
		func(w *WorkflowTx) error {
			// The other transaction now waits for w1, which the first body
			// holds; this one's lock of w2 closes the cycle. (Waiting for a
			// lock wait first only makes the order usual: the cycle, and
			// the victim, are the same either way.)
			go func() {
				_, err := other.ExecContext(e.ctx, render("SELECT id FROM {workflows} WHERE id = ? FOR UPDATE", e.tables), w1)
				blocked <- err
			}()
			for waiting := 0; waiting == 0 && len(blocked) == 0; {
				require.NoError(t, e.db.Get(&waiting,
					"SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"))
			}
			return batchBody(w2, nil)(w)
		},
	})
	require.Nil(t, errs)
	require.ErrorIs(t, berr, ErrBatchAborted)
	require.True(t, Transient(berr), "%v", berr)
	require.NoError(t, <-blocked, "the other transaction got its lock once the batch rolled back")
	require.NoError(t, other.Rollback())
	require.Zero(t, e.countJobsOf(w1))
	require.Zero(t, e.countJobsOf(w2))
	require.Equal(t, 1, e.countLogsOf(w1), "workflow_started only")
	require.Equal(t, 1, e.countLogsOf(w2), "workflow_started only")
}
