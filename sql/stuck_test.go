package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// newWorkflowRow inserts a workflow row as plain SQL would.
func (e *testEnv) newWorkflowRow(status, state string, current, total int) int64 {
	e.t.Helper()
	res := e.exec("INSERT INTO {workflows} (name, status, state, current_step, total_steps) VALUES ('wf', ?, ?, ?, ?)", status, state, current, total)
	id, err := res.LastInsertId()
	require.NoError(e.t, err)
	return id
}

func TestStuckJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	set := func(id int64, assign string, args ...any) {
		e.exec("UPDATE {jobs} SET "+assign+" WHERE id = ?", append(args, id)...)
	}
	a, b := e.dispatch(InsertJob{}), e.dispatch(InsertJob{})
	set(a, "depends_on = ?", b)
	set(b, "depends_on = ?", a)
	self := e.dispatch(InsertJob{})
	set(self, "depends_on = id")
	missing := e.dispatch(InsertJob{DependsOn: Int(999999)})
	dead := e.dispatch(InsertJob{})
	set(dead, "status = 'buried'")
	onBuried := e.dispatch(InsertJob{DependsOn: Int(dead)})
	zero := e.dispatch(InsertJob{ConcurrencyGroup: "g", ConcurrencyLimit: 2})
	set(zero, "concurrency_limit = 0")
	orphan := e.dispatch(InsertJob{WorkflowID: Int(424242), StepIndex: Int(0)})
	noReserved := e.dispatch(InsertJob{})
	e.hold(noReserved, "w", 1)
	set(noReserved, "reserved_at = NULL")
	future := e.dispatch(InsertJob{})
	e.hold(future, "w", 1)
	set(future, "reserved_at = '2099-01-01 00:00:00'")

	// Rows that will run: none of them is flagged.
	waiting := e.dispatch(InsertJob{DependsOn: Int(orphan)}) // waits on a pending job, not a cycle
	done := e.dispatch(InsertJob{})
	set(done, "status = 'completed'")
	e.dispatch(InsertJob{DependsOn: Int(done)})
	e.dispatch(InsertJob{ConcurrencyGroup: "g", ConcurrencyLimit: 1})
	wf := e.newWorkflowRow("running", "{}", 0, 1)
	e.dispatch(InsertJob{WorkflowID: Int(wf), StepIndex: Int(0)})
	e.hold(e.dispatch(InsertJob{}), "w", 1)
	buriedSelf := e.dispatch(InsertJob{})
	set(buriedSelf, "depends_on = id, status = 'buried'") // not pending: nothing to claim

	got, err := e.s.StuckJobs(e.ctx, StuckScan{})
	require.NoError(t, err)
	kinds := map[int64]string{}
	for _, j := range got {
		kinds[j.ID] = j.Kind
		require.NotEmpty(t, j.Reason())
	}
	want := map[int64]string{
		a: StuckDependencyCycle, b: StuckDependencyCycle, self: StuckDependencySelf,
		missing: StuckDependencyMissing, onBuried: StuckDependencyBuried, zero: StuckConcurrencyZero,
		orphan: StuckWorkflowMissing, noReserved: StuckReservedAtNull, future: StuckReservedFuture,
	}
	require.Equal(t, want, kinds)
	require.NotContains(t, kinds, waiting)
	for _, j := range got {
		switch j.ID {
		case missing:
			require.Equal(t, "depends on job 999999, which does not exist", j.Reason())
		case onBuried:
			require.Contains(t, j.Reason(), "which is buried")
		}
	}

	// The same reasons by id, for the rows a listing shows.
	byID, err := e.s.StuckJobsByID(e.ctx, []int64{a, self, waiting, zero, future, done})
	require.NoError(t, err)
	require.Len(t, byID, 4)
	require.Equal(t, StuckDependencyCycle, byID[a].Kind)
	require.Equal(t, StuckConcurrencyZero, byID[zero].Kind)
	require.Equal(t, StuckReservedFuture, byID[future].Kind)

	// The scans are bounded: only the oldest pending rows and the rows
	// with the highest depends_on are examined.
	got, err = e.s.StuckJobs(e.ctx, StuckScan{Pending: 2, Limit: 1})
	require.NoError(t, err)
	ids := []int64{}
	for _, j := range got {
		ids = append(ids, j.ID)
	}
	require.Equal(t, []int64{a, missing, noReserved},
		ids, "one of the two oldest pending, the newest dependency (999999), one processing")
}

func TestStuckWorkflowCandidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	step := `{"type":"single","class":"A"}`
	fine := e.newWorkflowRow("running", `{"_steps":[`+step+`,"B"]}`, 0, 2)
	short := e.newWorkflowRow("running", `{"_steps":[`+step+`]}`, 0, 2)
	holes := e.newWorkflowRow("waiting_for_signal", `{"_steps":[1,"x",null]}`, 0, 3)
	notJSON := e.newWorkflowRow("running", `not json{`, 0, 1)
	deep := e.newWorkflowRow("paused", `{"_steps":["A"],"x":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}`, 0, 1)
	e.newWorkflowRow("completed", `{"_steps":[]}`, 1, 3) // terminal: nothing left to run
	e.newWorkflowRow("failed", `not json{`, 0, 1)

	rows, err := e.s.StuckWorkflowCandidates(e.ctx, StuckScan{})
	require.NoError(t, err)
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []int64{short, holes, notJSON, deep}, ids, "a deep state is a candidate the caller parses")
	require.NotContains(t, ids, fine)
	require.Equal(t, "waiting_for_signal", rows[1].Status)
	require.Equal(t, 3, rows[1].TotalSteps)

	rows, err = e.s.StuckWorkflowCandidates(e.ctx, StuckScan{Workflows: 2})
	require.NoError(t, err)
	require.Len(t, rows, 1, "only the two oldest live workflows are examined")
}
