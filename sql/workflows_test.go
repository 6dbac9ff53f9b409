package store

import (
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func (e *testEnv) insertWorkflow(p InsertWorkflow) int64 {
	e.t.Helper()
	if p.Name == "" {
		p.Name = "wf"
	}
	if p.State == nil {
		p.State = []byte(`{"_steps":[]}`)
	}
	if p.Queue == "" {
		p.Queue = "default"
	}
	id, existing, err := e.s.InsertWorkflow(e.ctx, p)
	require.NoError(e.t, err)
	require.False(e.t, existing)
	return id
}

func TestInsertWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.insertWorkflow(InsertWorkflow{
		Name: "seq", State: []byte(`{"n":0,"_steps":[]}`), TotalSteps: 2, Queue: "q1",
		DeadlineAt: String("2030-01-01 00:00:00"),
		Jobs: []StepJob{
			{Queue: "q1", Handler: "A", Payload: []byte(`{"__queuety_runtime":{"max_attempts":3}}`), Priority: 2, MaxAttempts: 3, StepIndex: 0, CostUnits: 1},
			{Queue: "q1", Handler: "__queuety_delay", Payload: []byte(`{"step_index":0}`), MaxAttempts: 0, Delay: time.Minute,
				ConcurrencyGroup: "g", ConcurrencyLimit: 0},
		},
	})
	wf, err := e.s.GetWorkflow(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "seq", wf.Name)
	require.Equal(t, "running", wf.Status)
	require.Equal(t, `{"n":0,"_steps":[]}`, wf.State)
	require.Equal(t, 0, wf.CurrentStep)
	require.Equal(t, 2, wf.TotalSteps)
	require.True(t, wf.DeadlineAt.Valid)

	var jobs []JobRow
	require.NoError(t, e.db.Unsafe().Select(&jobs, render("SELECT * FROM {jobs} WHERE workflow_id = ? ORDER BY id", e.tables), id))
	require.Len(t, jobs, 2)
	require.Equal(t, "A", jobs[0].Handler)
	require.Equal(t, 2, jobs[0].Priority)
	require.Equal(t, int64(0), jobs[0].StepIndex.Int64)
	require.False(t, jobs[0].PayloadHash.Valid)
	require.Equal(t, 1, jobs[1].MaxAttempts, "at least one attempt")
	require.False(t, jobs[1].ConcurrencyGroup.Valid, "a group without a limit is not stored")
	require.Equal(t, int64(0), jobs[1].CostUnits)
	require.InDelta(t, 60, jobs[1].AvailableAt.Sub(e.clk.Now()).Seconds(), 1)

	var logs []LogRow
	require.NoError(t, e.db.Select(&logs, render("SELECT * FROM {logs} WHERE workflow_id = ?", e.tables), id))
	require.Len(t, logs, 1)
	require.Equal(t, EventWorkflowStarted, logs[0].Event)
	require.Equal(t, "seq", logs[0].Handler)
	require.Equal(t, "q1", logs[0].Queue)
	require.False(t, logs[0].JobID.Valid)

	_, err = e.s.GetWorkflow(e.ctx, id+100)
	require.True(t, errors.Is(err, ErrWorkflowNotFound))
}

func TestInsertWorkflowIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := InsertWorkflow{Name: "idem", State: []byte(`[]`), Queue: "default", IdempotencyKey: "k1",
		Jobs: []StepJob{{Queue: "default", Handler: "A", Payload: []byte(`[]`), MaxAttempts: 1}}}
	// Concurrent dispatches with one key: one workflow, one key row, one job.
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _, err := e.s.InsertWorkflow(e.ctx, p)
			require.NoError(t, err)
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {workflows}"))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {workflow_dispatch_keys} WHERE dispatch_key = 'k1'"))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {jobs}"))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {logs}"))
}

func TestWorkflowTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.insertWorkflow(InsertWorkflow{TotalSteps: 2, Jobs: []StepJob{
		{Queue: "default", Handler: "A", Payload: []byte(`[]`), MaxAttempts: 3, StepIndex: 0},
		{Queue: "default", Handler: "B", Payload: []byte(`[]`), MaxAttempts: 3, StepIndex: 0},
		{Queue: "default", Handler: "C", Payload: []byte(`[]`), MaxAttempts: 3, StepIndex: 1},
	}})
	jobIDs := func() []int64 {
		var ids []int64
		require.NoError(t, e.db.Select(&ids, render("SELECT id FROM {jobs} WHERE workflow_id = ? ORDER BY id", e.tables), id))
		return ids
	}()
	claimed, ok, err := e.s.ClaimJobByID(e.ctx, jobIDs[0], "w1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, StatusProcessing, claimed.Status)
	require.Equal(t, 1, claimed.Attempts)
	_, ok, err = e.s.ClaimJobByID(e.ctx, jobIDs[0], "w1")
	require.NoError(t, err)
	require.False(t, ok, "only pending jobs are claimed")

	err = e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		wf, err := tx.LockWorkflow(id)
		require.NoError(t, err)
		require.Equal(t, "running", wf.Status)
		missing, err := tx.LockWorkflow(id + 1)
		require.NoError(t, err)
		require.Nil(t, missing)
		job, err := tx.LockJob(jobIDs[0])
		require.NoError(t, err)
		require.Equal(t, StatusProcessing, job.Status)
		require.NoError(t, tx.CompleteJob(jobIDs[0]))
		n, err := tx.CountCompletedStepJobs(id, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, tx.SetState(id, []byte(`{"a":1}`)))
		require.NoError(t, tx.Advance(id, []byte(`{"a":2}`), 1))
		require.NoError(t, tx.BuryStepJobs(id, 0, "settled", 0))
		require.NoError(t, tx.InsertEvents(WorkflowEvent{WorkflowID: id, JobID: Int(jobIDs[0]), StepIndex: 0,
			StepName: String("0"), StepType: String("single"), Handler: "A", Event: "step_completed",
			Queue: String("default"), Attempt: Int(1), Input: []byte(`[]`), Output: []byte(`{"a":2}`),
			StateBefore: []byte(`[]`), StateAfter: []byte(`{"a":2}`), DurationMS: Int(3)}))
		return tx.InsertLogs(WorkflowLog(id, "wf", "default", EventWorkflowCompleted))
	})
	require.NoError(t, err)
	wf, err := e.s.GetWorkflow(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, `{"a":2}`, wf.State)
	require.Equal(t, 1, wf.CurrentStep)
	require.Equal(t, StatusCompleted, e.job(jobIDs[0]).Status)
	require.Equal(t, StatusBuried, e.job(jobIDs[1]).Status)
	require.Equal(t, "settled", e.job(jobIDs[1]).ErrorMessage.String)
	require.Equal(t, StatusPending, e.job(jobIDs[2]).Status, "other steps untouched")
	var ev struct {
		Output     sql.NullString `db:"output"`
		Context    sql.NullString `db:"context"`
		StateAfter sql.NullString `db:"state_after"`
	}
	require.NoError(t, e.db.Get(&ev, render("SELECT output, context, state_after FROM {workflow_events} WHERE workflow_id = ?", e.tables), id))
	require.Equal(t, `{"a":2}`, ev.Output.String)
	require.False(t, ev.Context.Valid)

	// Retry, failure (only once: the second changes no row), completion.
	e.exec("UPDATE {jobs} SET status = 'processing' WHERE id = ?", jobIDs[2])
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error { return tx.RetryJob(jobIDs[2], time.Minute) }))
	j := e.job(jobIDs[2])
	require.Equal(t, StatusPending, j.Status)
	require.InDelta(t, 60, j.AvailableAt.Sub(e.clk.Now()).Seconds(), 1)
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error {
		changed, err := tx.MarkFailed(id, []byte(`{"a":3}`), "boom")
		require.NoError(t, err)
		require.True(t, changed)
		changed, err = tx.MarkFailed(id, []byte(`{"a":4}`), "again")
		require.NoError(t, err)
		require.False(t, changed)
		return tx.BuryWorkflowJobs(id, "boom", 0)
	}))
	wf, err = e.s.GetWorkflow(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, `{"a":3}`, wf.State)
	require.Equal(t, "boom", wf.ErrorMessage.String)
	require.Equal(t, StatusBuried, e.job(jobIDs[2]).Status)
	require.NoError(t, e.s.WorkflowTx(e.ctx, func(tx *WorkflowTx) error { return tx.Complete(id, []byte(`{"a":5}`), 2) }))
	wf, err = e.s.GetWorkflow(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "completed", wf.Status)
	require.True(t, wf.CompletedAt.Valid)
}

// With WorkflowHandlers, workflow steps are claimable when the engine has
// their handler (or, with AllWorkflowSteps, whatever it is) and their
// workflow is running or paused; without, never.
func TestClaimSelectWorkflows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	step := func(handler string) []StepJob {
		return []StepJob{{Queue: "default", Handler: handler, Payload: []byte(`[]`), MaxAttempts: 3}}
	}
	running := e.insertWorkflow(InsertWorkflow{Jobs: step("GoStep")})
	paused := e.insertWorkflow(InsertWorkflow{Jobs: step("__queuety_delay")})
	failed := e.insertWorkflow(InsertWorkflow{Jobs: step("GoStep")})
	php := e.insertWorkflow(InsertWorkflow{Jobs: step("PhpStep")}) // claimed only with AllWorkflowSteps
	e.exec("UPDATE {workflows} SET status = 'paused' WHERE id = ?", paused)
	e.exec("UPDATE {workflows} SET status = 'failed' WHERE id = ?", failed)
	plain := e.dispatch(InsertJob{Handler: "noop"})
	other := e.dispatch(InsertJob{Handler: "other"})

	sel := func(p ClaimParams) map[int64]bool {
		c, err := e.s.BeginClaim(e.ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Rollback()) }()
		p.Queue, p.Limit = "default", 100
		rows, err := c.Select(e.ctx, p)
		require.NoError(t, err)
		got := map[int64]bool{}
		for _, r := range rows {
			if r.WorkflowID.Valid {
				got[r.WorkflowID.Int64] = true
			} else {
				got[-r.ID] = true
			}
		}
		return got
	}
	wfh := []string{"GoStep", "__queuety_delay"}
	require.Equal(t, map[int64]bool{-plain: true, -other: true}, sel(ClaimParams{}), "no workflow jobs without the switch")
	require.Equal(t, map[int64]bool{-plain: true, -other: true, running: true, paused: true}, sel(ClaimParams{WorkflowHandlers: wfh}))
	require.Equal(t, map[int64]bool{-plain: true, running: true, paused: true}, sel(ClaimParams{Handlers: []string{"noop"}, WorkflowHandlers: wfh}))
	require.Equal(t, map[int64]bool{running: true, paused: true}, sel(ClaimParams{Handlers: []string{}, WorkflowHandlers: wfh}))
	require.Equal(t, map[int64]bool{-plain: true}, sel(ClaimParams{Handlers: []string{"noop"}, WorkflowHandlers: []string{}}))
	// A step runner (the PHP pool) takes every step of a live workflow.
	all := map[int64]bool{running: true, paused: true, php: true}
	require.Equal(t, map[int64]bool{-plain: true, -other: true, running: true, paused: true, php: true}, sel(ClaimParams{WorkflowHandlers: wfh, AllWorkflowSteps: true}))
	require.Equal(t, map[int64]bool{-plain: true, running: true, paused: true, php: true}, sel(ClaimParams{Handlers: []string{"noop"}, WorkflowHandlers: wfh, AllWorkflowSteps: true}))
	require.Equal(t, all, sel(ClaimParams{Handlers: []string{}, WorkflowHandlers: []string{}, AllWorkflowSteps: true}))
}

// TestInsertWorkflowStepLimit (N19): a workflow of more steps than the
// plugin's TINYINT columns hold is refused with ErrTooManySteps before
// anything is written, at the top level and as a child.
func TestInsertWorkflowStepLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, _, err := e.s.InsertWorkflow(e.ctx, InsertWorkflow{Name: "big", State: []byte("{}"), TotalSteps: 256})
	require.ErrorIs(t, err, ErrTooManySteps)
	require.Contains(t, err.Error(), "at most 255")
	require.Zero(t, e.count("SELECT COUNT(*) FROM {workflows}"))
	require.ErrorIs(t, InsertWorkflow{TotalSteps: 300}.checkSteps(), ErrTooManySteps)
	require.NoError(t, InsertWorkflow{TotalSteps: MaxWorkflowSteps}.checkSteps())
}
