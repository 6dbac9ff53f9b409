package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// insertStep inserts a workflow step job with a status.
func (e *testEnv) insertStep(handler, status string) int64 {
	e.t.Helper()
	res := e.exec(`INSERT INTO {jobs} (queue, handler, payload, status, workflow_id, step_index, available_at)
		VALUES ('default', ?, '[]', ?, 1, 0, NOW())`, handler, status)
	id, err := res.LastInsertId()
	require.NoError(e.t, err)
	return id
}

// The local executions, attempts and the queued counterparts, as the
// operator metrics define them.
func TestActivityMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clk.Now()
	open := func(jobStatus string, withAttempt bool) int64 {
		job := e.insertStep("Local", jobStatus)
		var id int64
		require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
			var err error
			id, err = tx.InsertRunningActivityExecution(NewRunningExecution{
				NewActivityExecution: NewActivityExecution{WorkflowID: 1, JobID: job, ActivityType: "Local",
					Options: []byte(`{}`), RetryPolicy: []byte(`{}`), History: []byte(`[]`), Now: now},
				AttemptID: "01J0000000000000000000000" + string(rune('A'+job%26)),
			})
			if err != nil || !withAttempt {
				return err
			}
			return tx.InsertActivityAttempt(StartAttempt{ExecutionID: id, WorkflowID: 1, JobID: job,
				AttemptID: "01J0000000000000000000000" + string(rune('A'+job%26)), AttemptNumber: 1, Now: now})
		}))
		return id
	}
	running := open(StatusProcessing, true)
	_ = open(StatusBuried, true) // a cancelled workflow buried its job: not open
	done := open(StatusProcessing, true)
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		ok, err := tx.CompleteActivity(done, []byte(`{"ok":true}`), []byte(`[]`), now.Add(time.Second))
		require.True(t, ok)
		return err
	}))
	e.insertStep("Queued", StatusPending)
	e.insertStep("Queued", StatusProcessing)
	e.insertStep("__queuety_delay", StatusPending) // orchestration, not an activity
	e.insertStep("Queued", StatusCompleted)
	e.exec(`INSERT INTO {logs} (job_id, workflow_id, handler, queue, event) VALUES (100, 1, 'Queued', 'default', 'failed')`)
	e.exec(`INSERT INTO {jobs} (queue, handler, payload, status, available_at) VALUES ('default', 'Plain', '[]', 'pending', NOW())`)

	m, err := e.s.ActivityMetrics(e.ctx)
	require.NoError(t, err)
	require.Equal(t, ActivityMetrics{
		Local: 3, LocalOpen: 1, LocalPending: 0, LocalRunning: 1, LocalCompleted: 1,
		LocalAttempts: 3, LocalFailedAttempts: 0,
		QueuedOpen: 2, QueuedPending: 1, QueuedRunning: 1, QueuedFailedAttempts: 1,
		JobsPending: 1,
	}, m)

	x, err := e.s.ActivityExecutionOfJob(e.ctx, 1)
	require.NoError(t, err)
	require.Equal(t, running, x.ID)
	atts, err := e.s.ActivityAttempts(e.ctx, 1)
	require.NoError(t, err)
	require.Len(t, atts, 3)
	require.Equal(t, AttemptCompleted, atts[2].Status)
	xs, err := e.s.ActivityExecutions(e.ctx, 1)
	require.NoError(t, err)
	require.Equal(t, `{"ok":true}`, xs[2].Result.String)

	// The fenced completion changes nothing when the claim moved on, and
	// fails the transaction.
	err = e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.CompleteJobAsLocalStep(LocalStepDone{JobID: 1, Owner: "someone-else", Attempts: 1, ExecutionID: running,
			AttemptID: atts[0].ID, Result: []byte(`{}`), History: []byte(`[]`), Now: now})
		return tx.CompleteJob(1)
	})
	require.ErrorIs(t, err, ErrAssumptionFailed)
	require.NoError(t, e.s.TruncateActivities(e.ctx))
	m, err = e.s.ActivityMetrics(e.ctx)
	require.NoError(t, err)
	require.Zero(t, m.Local)
}
