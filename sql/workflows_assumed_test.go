package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A write of an assumed workflow row goes through only while the row is
// what its writer last committed: its status, step and state, the state
// compared by the SHA-256 of its bytes (not by the column's
// case-insensitive collation), multi-byte characters included.
func TestAssumedWorkflowWritesAreFenced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{\"a\":\"x\"}', 2)")
	id, err := res.LastInsertId()
	require.NoError(t, err)
	get := func() *WorkflowRow {
		wf, err := e.s.GetWorkflow(e.ctx, id)
		require.NoError(t, err)
		return wf
	}
	write := func(assumed *WorkflowRow, complete bool) error {
		return e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
			tx.AssumeWorkflow(assumed)
			if complete {
				return tx.Complete(id, []byte(`{"a":"z"}`), 2)
			}
			return tx.Advance(id, []byte(`{"a":"y"}`), 1)
		})
	}
	known := get()
	stale := *known
	stale.State = `{"a":"X"}` // equal to the row under utf8mb4_unicode_ci
	require.ErrorIs(t, write(&stale, false), ErrAssumptionFailed)
	stale = *known
	stale.Status = "paused"
	require.ErrorIs(t, write(&stale, false), ErrAssumptionFailed)
	require.Equal(t, 0, get().CurrentStep, "a failed fence writes nothing")

	require.NoError(t, write(known, false))
	require.Equal(t, `{"a":"y"}`, get().State)
	require.Equal(t, 1, get().CurrentStep)
	require.ErrorIs(t, write(known, true), ErrAssumptionFailed, "the row moved on")
	require.NoError(t, write(get(), true))
	require.Equal(t, "completed", get().Status)

	e.exec("UPDATE {workflows} SET status = 'running', current_step = 0, state = '{\"a\":\"é ✓ 🦫\"}' WHERE id = ?", id)
	require.NoError(t, write(get(), false), "the hash is the stored bytes'")

	// A lock of the assumed row reads it and checks it.
	err = e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(known)
		_, err := tx.LockWorkflow(id)
		return err
	})
	require.ErrorIs(t, err, ErrAssumptionFailed)
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		tx.AssumeWorkflow(get())
		wf, err := tx.LockWorkflow(id)
		require.NotNil(t, wf)
		return err
	}))
}
