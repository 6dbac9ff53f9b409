package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The lifecycle statements of queries_lifecycle.sql on MariaDB (the
// engine's tests in package workflow drive them through whole scenarios).
func TestWorkflowLifecycleStatements(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	job := func(h string) []StepJob {
		return []StepJob{{Queue: "default", Handler: h, Payload: []byte(`[]`), MaxAttempts: 2, StepIndex: 0}}
	}
	a := e.insertWorkflow(InsertWorkflow{Name: "a", TotalSteps: 1, Jobs: job("A"), DeadlineAt: String("2000-01-01 00:00:00")})
	b := e.insertWorkflow(InsertWorkflow{Name: "b", TotalSteps: 1, Jobs: job("B")})

	// pause: only running rows change; the log row is written either way
	changed, err := e.s.PauseRunningWorkflow(e.ctx, b)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = e.s.PauseRunningWorkflow(e.ctx, b)
	require.NoError(t, err)
	require.False(t, changed)
	var paused int
	require.NoError(t, e.db.Get(&paused, render("SELECT COUNT(*) FROM {logs} WHERE workflow_id = ? AND event = 'workflow_paused' AND handler = ''", e.tables), b))
	require.Equal(t, 2, paused)

	// overdue: running with a past deadline only
	ids, err := e.s.OverdueWorkflows(e.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{a}, ids)

	// cancel / resume / retry row updates
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		if err := tx.ResumePausedWorkflow(b); err != nil {
			return err
		}
		return tx.CancelWorkflowRow(a)
	}))
	wa, err := e.s.GetWorkflow(e.ctx, a)
	require.NoError(t, err)
	require.Equal(t, "cancelled", wa.Status)
	require.True(t, wa.CompletedAt.Valid)
	e.exec("UPDATE {workflows} SET status = 'failed', failed_at = NOW(), error_message = 'x' WHERE id = ?", b)
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error { return tx.RetryFailedWorkflow(b) }))
	wb, err := e.s.GetWorkflow(e.ctx, b)
	require.NoError(t, err)
	require.Equal(t, "running", wb.Status)
	require.False(t, wb.FailedAt.Valid)
	require.False(t, wb.ErrorMessage.Valid)

	// statuses, counts, lists
	st, err := e.s.WorkflowStatuses(e.ctx, []int64{a, b, 999})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{a: "cancelled", b: "running"}, st)
	st, err = e.s.WorkflowStatuses(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, st)
	n, err := e.s.CountWorkflows(e.ctx, "running")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, tc := range []struct {
		f    WorkflowFilter
		want []int64
	}{
		{WorkflowFilter{}, []int64{b, a}},
		{WorkflowFilter{Limit: 1}, []int64{b}},
		{WorkflowFilter{Status: "cancelled"}, []int64{a}},
		{WorkflowFilter{Name: "b"}, []int64{b}},
		{WorkflowFilter{Name: "b", Status: "cancelled"}, nil},
	} {
		rows, err := e.s.ListWorkflows(e.ctx, tc.f)
		require.NoError(t, err)
		var got []int64
		for _, r := range rows {
			got = append(got, r.ID)
		}
		require.Equal(t, tc.want, got, "%+v", tc.f)
	}

	// signals and artifacts
	e.exec("INSERT INTO {signals} (workflow_id, signal_name, payload) VALUES (?, 'go', '{\"a\":1}'), (?, 'stop', '[]')", a, a)
	sigs, err := e.s.SignalsOf(e.ctx, a)
	require.NoError(t, err)
	require.Equal(t, []ReceivedSignal{{"go", `{"a":1}`}, {"stop", "[]"}}, sigs)
	require.NoError(t, e.s.PutArtifact(e.ctx, a, "k", "json", `{"x":1}`, `[]`, Int(0)))
	require.NoError(t, e.s.PutArtifact(e.ctx, a, "k", "text", `hello`, `{"m":1}`, Int(0)))
	require.NoError(t, e.s.PutArtifact(e.ctx, a, "b", "json", `1`, `[]`, Int(0)))
	art, err := e.s.GetArtifact(e.ctx, a, "k")
	require.NoError(t, err)
	require.Equal(t, "text", art.Kind)
	require.Equal(t, "hello", art.Content)
	keys, err := e.s.ArtifactKeys(e.ctx, a)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "k"}, keys)
	require.NoError(t, e.s.DeleteArtifact(e.ctx, a, "k"))
	_, err = e.s.GetArtifact(e.ctx, a, "k")
	require.ErrorIs(t, err, ErrArtifactNotFound)

	// export rows: NULLs as nil, times as DATETIME strings
	rows, err := e.s.ExportWorkflowRows(e.ctx, a)
	require.NoError(t, err)
	require.Equal(t, "a", *rows.Workflow.Get("name"))
	require.Nil(t, rows.Workflow.Get("failed_at"))
	_, perr := time.Parse(time.DateTime, *rows.Workflow.Get("started_at"))
	require.NoError(t, perr)
	require.Len(t, rows.Jobs, 1)
	require.Len(t, rows.Signals, 2)
	require.Len(t, rows.Artifacts, 1)
	require.NotEmpty(t, rows.Logs)
	_, err = e.s.ExportWorkflowRows(e.ctx, 999)
	require.ErrorIs(t, err, ErrWorkflowNotFound)

	events, err := e.s.WorkflowTimeline(e.ctx, a, 0, 10)
	require.NoError(t, err)
	require.Empty(t, events)

	require.NoError(t, e.s.TruncateWorkflows(e.ctx))
	n, err = e.s.CountWorkflows(e.ctx, "running")
	require.NoError(t, err)
	require.Zero(t, n)
}

// Stale workflow steps: retried or buried with Queuety's log rows; a
// kept row (for_each branch) is logged but left processing; concurrent
// sweeps never take one row twice.
func TestRecoverStaleWorkflowSteps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.insertWorkflow(InsertWorkflow{TotalSteps: 1, Jobs: []StepJob{
		{Queue: "default", Handler: "A", Payload: []byte(`[]`), MaxAttempts: 3},
		{Queue: "default", Handler: "B", Payload: []byte(`[]`), MaxAttempts: 3},
		{Queue: "default", Handler: "C", Payload: []byte(`[]`), MaxAttempts: 3},
	}})
	plain := e.dispatchN(1, InsertJob{})[0]
	old := DateTime(e.clk.Now().Add(-time.Hour))
	e.exec("UPDATE {jobs} SET status = 'processing', attempts = 1, reserved_at = ?", old)
	var ids []int64
	require.NoError(t, e.db.Select(&ids, render("SELECT id FROM {jobs} WHERE workflow_id = ? ORDER BY id", e.tables), wf))

	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	total := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, buried, err := e.s.RecoverStaleWorkflowSteps(e.ctx, e.clk.Now().Add(-time.Minute), 10, func(j *JobRow) StaleStepDecision {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				switch j.Handler {
				case "A":
					return StaleStepDecision{Delay: time.Minute}
				case "B":
					return StaleStepDecision{Bury: true}
				}
				return StaleStepDecision{Bury: true, KeepRow: true}
			})
			require.NoError(t, err)
			mu.Lock()
			total += r + len(buried)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, 3, total)
	require.Equal(t, map[int64]int{ids[0]: 1, ids[1]: 1, ids[2]: 1}, seen, "each row once; plain jobs left to find-stale")
	jobs := map[int64]JobRow{}
	var rows []JobRow
	require.NoError(t, e.db.Unsafe().Select(&rows, render("SELECT * FROM {jobs}", e.tables)))
	for _, r := range rows {
		jobs[r.ID] = r
	}
	require.Equal(t, StatusPending, jobs[ids[0]].Status)
	require.Equal(t, StatusBuried, jobs[ids[1]].Status)
	require.Equal(t, StaleMessage, jobs[ids[1]].ErrorMessage.String)
	require.Equal(t, StatusProcessing, jobs[ids[2]].Status)
	require.Equal(t, StatusProcessing, jobs[plain].Status)
	var events []string
	require.NoError(t, e.db.Select(&events, render("SELECT event FROM {logs} WHERE job_id IS NOT NULL ORDER BY job_id", e.tables)))
	require.Equal(t, []string{"retried", "buried", "buried"}, events)
}
