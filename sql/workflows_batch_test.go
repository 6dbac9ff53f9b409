package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// batchBody locks a workflow, writes a job row (deferred) and a buffered
// log row for it, then returns fail.
func batchBody(id int64, fail error) BatchBody {
	return BatchBody{WorkflowID: id, Fn: func(w *WorkflowTx) error {
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
	}}
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
	errs, err := e.s.WorkflowTxBatch(e.ctx, []BatchBody{
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
	errs, err := e.s.WorkflowTxBatch(e.ctx, []BatchBody{
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

type batchWorkflow struct {
	Status      string         `db:"status"`
	State       string         `db:"state"`
	CurrentStep int            `db:"current_step"`
	CompletedAt sql.NullString `db:"completed_at"`
}

func (e *testEnv) batchWorkflow(id int64) batchWorkflow {
	e.t.Helper()
	var r batchWorkflow
	require.NoError(e.t, e.db.Get(&r, render("SELECT status, state, current_step, completed_at FROM {workflows} WHERE id = ?", e.tables), id))
	return r
}

// insertWorkflowWithJob is a running workflow with a pending job for step 0.
func (e *testEnv) insertWorkflowWithJob() (workflowID, jobID int64) {
	e.t.Helper()
	workflowID = e.insertWorkflow(InsertWorkflow{TotalSteps: 3, Jobs: []StepJob{{Queue: "q", Handler: "H", Payload: []byte(`{}`)}}})
	require.NoError(e.t, e.db.Get(&jobID, render("SELECT id FROM {jobs} WHERE workflow_id = ?", e.tables), workflowID))
	return workflowID, jobID
}

// The hot path of a batch defers its writes, and every later read sees
// them: a body locking a row an earlier body wrote reads the written row,
// two writes of one row apply in turn, and a failing body's deferred
// writes are dropped.
func TestWorkflowTxBatchDeferredWritesAreSeenAndApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, jobA := e.insertWorkflowWithJob()
	b, jobB := e.insertWorkflowWithJob()
	boom := errors.New("boom")
	var seenA *WorkflowRow
	var seenJobA *JobRow
	errs, err := e.s.WorkflowTxBatch(e.ctx, []BatchBody{
		{WorkflowID: a, JobID: jobA, Fn: func(w *WorkflowTx) error {
			wf, err := w.LockWorkflow(a)
			require.NoError(t, err)
			require.Equal(t, "running", wf.Status)
			job, err := w.LockJob(jobA)
			require.NoError(t, err)
			require.Equal(t, "pending", job.Status)
			require.NoError(t, w.Advance(a, []byte(`{"s":1}`), 1))
			require.NoError(t, w.CompleteJob(jobA))
			require.NoError(t, w.InsertStepJobs(a, []StepJob{{Queue: "q", Handler: "H2", Payload: []byte(`{}`), StepIndex: 1}}))
			// Completing after advancing: the later state and step, completed.
			return w.Complete(a, []byte(`{"s":2}`), 3)
		}},
		{WorkflowID: b, JobID: jobB, Fn: func(w *WorkflowTx) error {
			if _, err := w.LockWorkflow(b); err != nil {
				return err
			}
			require.NoError(t, w.Advance(b, []byte(`{"s":"never"}`), 1))
			require.NoError(t, w.CompleteJob(jobB))
			require.NoError(t, w.InsertStepJobs(b, []StepJob{{Queue: "q", Handler: "never", Payload: []byte(`{}`), StepIndex: 1}}))
			return boom
		}},
		{WorkflowID: a, Fn: func(w *WorkflowTx) error {
			var err error
			if seenA, err = w.LockWorkflow(a); err != nil {
				return err
			}
			seenJobA, err = w.LockJob(jobA)
			return err
		}},
	})
	require.NoError(t, err)
	require.Equal(t, []error{nil, boom, nil}, errs)
	require.Equal(t, "completed", seenA.Status, "the third body read the first one's write")
	require.Equal(t, `{"s":2}`, seenA.State)
	require.Equal(t, 3, seenA.CurrentStep)
	require.Equal(t, "completed", seenJobA.Status)

	got := e.batchWorkflow(a)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, `{"s":2}`, got.State)
	require.Equal(t, 3, got.CurrentStep)
	require.True(t, got.CompletedAt.Valid)
	require.Equal(t, "completed", e.job(jobA).Status)
	require.Equal(t, 2, e.countJobsOf(a))
	require.Equal(t, 1, e.count(render("SELECT COUNT(*) FROM {jobs} WHERE workflow_id = ? AND handler = 'H2' AND step_index = 1 AND status = 'pending'", e.tables), a))

	got = e.batchWorkflow(b)
	require.Equal(t, "running", got.Status)
	require.Equal(t, 0, got.CurrentStep)
	require.False(t, got.CompletedAt.Valid)
	require.Equal(t, "pending", e.job(jobB).Status)
	require.Equal(t, 1, e.countJobsOf(b))
}

// A body that sends a real statement after deferring writes takes its
// savepoint first: what it sent is rolled back when it fails, while the
// writes of the bodies before it, sent ahead of that savepoint, commit.
func TestWorkflowTxBatchRealStatementAfterDeferredWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, jobA := e.insertWorkflowWithJob()
	b, jobB := e.insertWorkflowWithJob()
	boom := errors.New("boom")
	errs, err := e.s.WorkflowTxBatch(e.ctx, []BatchBody{
		{WorkflowID: a, JobID: jobA, Fn: func(w *WorkflowTx) error {
			require.NoError(t, w.Advance(a, []byte(`{"a":1}`), 1))
			return w.CompleteJob(jobA)
		}},
		{WorkflowID: b, JobID: jobB, Fn: func(w *WorkflowTx) error {
			require.NoError(t, w.Advance(b, []byte(`{"b":1}`), 1))
			require.NoError(t, w.CompleteJob(jobB))
			// A real statement: the first body's writes and this one's are
			// sent, this one's inside its savepoint.
			n, err := w.CountCompletedStepJobs(b, 0)
			require.NoError(t, err)
			require.Equal(t, 1, n, "the count sees this body's own deferred completion")
			n, err = w.CountCompletedStepJobs(a, 0)
			require.NoError(t, err)
			require.Equal(t, 1, n, "and the first body's")
			return boom
		}},
	})
	require.NoError(t, err)
	require.Equal(t, []error{nil, boom}, errs)
	require.Equal(t, 1, e.batchWorkflow(a).CurrentStep)
	require.Equal(t, "completed", e.job(jobA).Status)
	require.Equal(t, 0, e.batchWorkflow(b).CurrentStep)
	require.Equal(t, "pending", e.job(jobB).Status)
}

// Ten bodies of the step's hot path (lock, write state, complete the job,
// enqueue the next) commit together, each row written exactly as the
// single-statement path writes it.
func TestWorkflowTxBatchMatchesSingleStatements(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := func(id, jobID int64, last bool) func(*WorkflowTx) error {
		return func(w *WorkflowTx) error {
			if _, err := w.LockWorkflow(id); err != nil {
				return err
			}
			if _, err := w.LockJob(jobID); err != nil {
				return err
			}
			state := []byte(fmt.Sprintf(`{"id":%d,"big":"%s"}`, id, strings.Repeat("x", 2000)))
			if err := w.CompleteJob(jobID); err != nil {
				return err
			}
			if last {
				return w.Complete(id, state, 1)
			}
			if err := w.Advance(id, state, 1); err != nil {
				return err
			}
			return w.InsertStepJobs(id, []StepJob{{Queue: "q", Handler: "Next", Payload: []byte(`{"n":1}`), StepIndex: 1,
				Priority: 2, MaxAttempts: 5, ConcurrencyGroup: "g", ConcurrencyLimit: 3, CostUnits: 4}})
		}
	}
	var bodies []BatchBody
	var singles []int64
	for i := range 10 {
		id, jobID := e.insertWorkflowWithJob()
		bodies = append(bodies, BatchBody{WorkflowID: id, JobID: jobID, Fn: body(id, jobID, i%3 == 0)})
		sid, sjob := e.insertWorkflowWithJob()
		require.NoError(t, e.s.WorkflowTx(e.ctx, body(sid, sjob, i%3 == 0)))
		singles = append(singles, sid)
	}
	errs, err := e.s.WorkflowTxBatch(e.ctx, bodies)
	require.NoError(t, err)
	require.Equal(t, make([]error, 10), errs)
	cols := "status, current_step, completed_at IS NOT NULL AS done, REPLACE(state, CONCAT('\"id\":', id), '') AS state"
	jobCols := "queue, handler, payload, priority, status, max_attempts, attempts, step_index, concurrency_group, concurrency_limit, cost_units, completed_at IS NOT NULL AS done"
	for i, b := range bodies {
		require.Equal(t, e.dumpOf(cols, "workflows", "id = ?", singles[i]), e.dumpOf(cols, "workflows", "id = ?", b.WorkflowID), "workflow %d", i)
		require.Equal(t, e.dumpOf(jobCols, "jobs", "workflow_id = ? ORDER BY id", singles[i]), e.dumpOf(jobCols, "jobs", "workflow_id = ? ORDER BY id", b.WorkflowID), "jobs of workflow %d", i)
	}
}

// dumpOf reads cols of the rows of table matching where, as strings.
func (e *testEnv) dumpOf(cols, table, where string, args ...any) []map[string]string {
	e.t.Helper()
	return e.dumpQuery(render("SELECT "+cols+" FROM {"+table+"} WHERE "+where, e.tables), args...)
}

// Chained step jobs inserted by a batch are written claimed, and each
// body learns its own row's id, also next to a plain job of the same
// workflow and step and in the single-statement path.
func TestWorkflowTxBatchChainedJobIDs(t *testing.T) {
	t.Parallel()
	bothIDModes(t, testChainedJobIDs)
}

// bothIDModes runs test on a fresh database twice: with the ids of a
// multi-row INSERT counted from its first (MariaDB's default
// innodb_autoinc_lock_mode 1) and read back, as on a server in mode 2.
func bothIDModes(t *testing.T, test func(*testing.T, *testEnv)) {
	for _, readBack := range []bool{false, true} {
		t.Run(map[bool]string{false: "consecutive ids", true: "ids read back"}[readBack], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if readBack {
				e.s.autoinc.once.Do(func() {}) // never read: not consecutive
			}
			_, ok := e.s.consecutiveIDs(e.ctx)
			require.Equal(t, !readBack, ok, "MariaDB's default innodb_autoinc_lock_mode (1) numbers a multi-row INSERT consecutively")
			test(t, e)
		})
	}
}

func testChainedJobIDs(t *testing.T, e *testEnv) {
	a, _ := e.insertWorkflowWithJob()
	b, _ := e.insertWorkflowWithJob()
	ids := map[int64]*int64{}
	body := func(wf int64, step int) func(*WorkflowTx) error {
		return func(w *WorkflowTx) error {
			if err := w.InsertStepJobs(wf, []StepJob{{Queue: "q", Handler: "Plain", Payload: []byte(`{}`), StepIndex: step}}); err != nil {
				return err
			}
			id, err := w.InsertChainedStepJob(wf, StepJob{Queue: "q", Handler: "Next", Payload: []byte(`{"k":1}`), StepIndex: step, MaxAttempts: 4}, "worker-1")
			ids[wf] = id
			return err
		}
	}
	errs, err := e.s.WorkflowTxBatch(e.ctx, []BatchBody{{WorkflowID: a, Fn: body(a, 1)}, {WorkflowID: b, Fn: body(b, 2)}})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)
	c := e.insertWorkflow(InsertWorkflow{})
	require.NoError(t, e.s.WorkflowTx(e.ctx, body(c, 3)))
	for wf, step := range map[int64]int{a: 1, b: 2, c: 3} {
		got := e.job(*ids[wf])
		require.Equal(t, "Next", got.Handler, "workflow %d", wf)
		require.Equal(t, wf, got.WorkflowID.Int64)
		require.EqualValues(t, step, got.StepIndex.Int64)
		require.Equal(t, "processing", got.Status)
		require.Equal(t, 1, got.Attempts)
		require.Equal(t, "worker-1", got.ReservedBy.String)
	}
}

// Many batches at once, each inserting the chained jobs of several
// workflows beside other writers' rows: every body learns the id of its
// own row, in both ways of learning them.
func TestWorkflowTxBatchChainedJobIDsConcurrent(t *testing.T) {
	t.Parallel()
	bothIDModes(t, func(t *testing.T, e *testEnv) {
		const batches, per = 8, 12
		wfs := make([][]int64, batches)
		for b := range wfs {
			for range per {
				wf, _ := e.insertWorkflowWithJob()
				wfs[b] = append(wfs[b], wf)
			}
		}
		var wg sync.WaitGroup
		got := make([]map[int64]*int64, batches)
		errc := make(chan error, batches*2)
		for b := range batches {
			got[b] = map[int64]*int64{}
			bodies := make([]BatchBody, per)
			for i, wf := range wfs[b] {
				bodies[i] = BatchBody{WorkflowID: wf, Fn: func(w *WorkflowTx) error {
					id, err := w.InsertChainedStepJob(wf, StepJob{Queue: "q", Handler: fmt.Sprintf("Next%d", wf), Payload: []byte(`{}`), StepIndex: 1}, fmt.Sprintf("worker-%d", b%2))
					got[b][wf] = id
					return err
				}}
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				errs, err := e.s.WorkflowTxBatch(e.ctx, bodies)
				if err == nil {
					err = errors.Join(errs...)
				}
				errc <- err
			}()
			go func() { // another writer's rows, interleaved with the batches'
				defer wg.Done()
				for range per {
					if _, _, err := e.s.InsertJob(e.ctx, InsertJob{Queue: "other", Handler: "noop", Payload: []byte(`{}`), MaxAttempts: 3}); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		for b := range batches {
			for _, wf := range wfs[b] {
				j := e.job(*got[b][wf])
				require.Equal(t, fmt.Sprintf("Next%d", wf), j.Handler, "batch %d workflow %d", b, wf)
				require.Equal(t, wf, j.WorkflowID.Int64)
				require.Equal(t, fmt.Sprintf("worker-%d", b%2), j.ReservedBy.String)
			}
		}
	})
}
