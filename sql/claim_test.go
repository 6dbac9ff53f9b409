package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func idsOf(rows []JobRow) []int64 {
	out := make([]int64, len(rows))
	for i := range rows {
		out[i] = rows[i].ID
	}
	return out
}

// claimIDs runs one Select in its own window and rolls it back.
func (e *testEnv) claimIDs(p ClaimParams) []int64 {
	e.t.Helper()
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(e.t, err)
	defer func() { _ = c.Rollback() }()
	rows, err := c.Select(e.ctx, p)
	require.NoError(e.t, err)
	return idsOf(rows)
}

func TestClaimSelectOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var id []int64
	for _, p := range []int{0, 2, 1, 2, 3, 0} {
		id = append(id, e.dispatch(InsertJob{Priority: p}))
	}
	// priority DESC, then id ASC.
	require.Equal(t, []int64{id[4], id[1], id[3], id[2], id[0], id[5]}, e.claimIDs(ClaimParams{Queue: "default", Limit: 10}))
	require.Equal(t, []int64{id[4], id[1]}, e.claimIDs(ClaimParams{Queue: "default", Limit: 2}))
	require.Empty(t, e.claimIDs(ClaimParams{Queue: "default", Limit: 0}))
	require.Empty(t, e.claimIDs(ClaimParams{Queue: "default", Limit: -1}))
}

func TestClaimSelectColumns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dep := e.dispatch(InsertJob{Queue: "other"})
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", dep)
	id := e.dispatch(InsertJob{
		Queue: "mail", Handler: `App\Jobs\Send`, Payload: []byte(`{"to":"a@b.c"}`), Priority: 2, MaxAttempts: 5,
		DependsOn: Int(dep), ConcurrencyGroup: "g", ConcurrencyLimit: 3, CostUnits: 4,
	})
	e.exec("UPDATE {jobs} SET attempts = 2 WHERE id = ?", id)
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	defer func() { _ = c.Rollback() }()
	rows, err := c.Select(e.ctx, ClaimParams{Queue: "mail", Limit: 5})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	r := rows[0]
	require.Equal(t, id, r.ID)
	require.Equal(t, "mail", r.Queue)
	require.Equal(t, `App\Jobs\Send`, r.Handler)
	require.Equal(t, `{"to":"a@b.c"}`, r.Payload)
	require.Equal(t, 2, r.Priority)
	require.Equal(t, 2, r.Attempts, "attempts as stored: Select does not count the attempt yet")
	require.Equal(t, 5, r.MaxAttempts)
	require.Equal(t, Int(dep), r.DependsOn)
	require.False(t, r.BatchID.Valid)
	require.Equal(t, String("g"), r.ConcurrencyGroup)
	require.Equal(t, Int(3), r.ConcurrencyLimit)
	require.Equal(t, int64(4), r.CostUnits)
	require.False(t, r.WorkflowID.Valid)
}

func TestClaimSelectSkips(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ready := e.dispatch(InsertJob{})
	delayed := e.dispatch(InsertJob{Delay: time.Hour})
	_ = e.dispatch(InsertJob{Queue: "mail"})
	// A workflow step is left to the workflow engine even while its workflow
	// runs (PHP's claim would take it).
	res := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{}', 2)")
	wfID, err := res.LastInsertId()
	require.NoError(t, err)
	_ = e.dispatch(InsertJob{WorkflowID: Int(wfID), StepIndex: Int(0)})
	// A batch job whose batch has a PHP callback is left to PHP unless
	// the claim has a PHP pool (PHPCallbacks) or a Go callback of that name.
	e.exec(`INSERT INTO {batches} (id, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options) VALUES (1, 1, 1, 0, '[]', '{"then":"PhpThen"}')`)
	batchJob := e.dispatch(InsertJob{BatchID: Int(1)})
	depPending := e.dispatch(InsertJob{Queue: "deps"})
	depDone := e.dispatch(InsertJob{Queue: "deps"})
	depBuried := e.dispatch(InsertJob{Queue: "deps"})
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", depDone)
	e.exec("UPDATE {jobs} SET status = 'buried' WHERE id = ?", depBuried)
	waiting := e.dispatch(InsertJob{DependsOn: Int(depPending)})
	freed := e.dispatch(InsertJob{DependsOn: Int(depDone)})
	_ = e.dispatch(InsertJob{DependsOn: Int(depBuried)})
	_ = e.dispatch(InsertJob{DependsOn: Int(999999)})
	e.hold(e.dispatch(InsertJob{}), "w", 1)
	for _, st := range []string{"completed", "failed", "buried"} {
		e.exec("UPDATE {jobs} SET status = ? WHERE id = ?", st, e.dispatch(InsertJob{}))
	}

	all := ClaimParams{Queue: "default", Limit: 100}
	require.Equal(t, []int64{ready, freed}, e.claimIDs(all))
	require.Equal(t, []int64{ready, batchJob, freed}, e.claimIDs(ClaimParams{Queue: "default", Limit: 100, PHPCallbacks: true}))
	require.Equal(t, []int64{ready, batchJob, freed}, e.claimIDs(ClaimParams{Queue: "default", Limit: 100, BatchCallbacks: []string{"PhpThen"}}))

	// Once its dependency completes, the waiting job is claimable.
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", depPending)
	require.Equal(t, []int64{ready, waiting, freed}, e.claimIDs(all))

	// available_at is compared with the server's NOW().
	e.exec("UPDATE {jobs} SET available_at = NOW() WHERE id = ?", delayed)
	require.Equal(t, []int64{ready, delayed, waiting, freed}, e.claimIDs(all))
}

func TestClaimSelectHandlers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a1 := e.dispatch(InsertJob{Handler: "a"})
	b1 := e.dispatch(InsertJob{Handler: "b"})
	c1 := e.dispatch(InsertJob{Handler: "c"})
	a2 := e.dispatch(InsertJob{Handler: "a"})
	for _, tc := range []struct {
		name     string
		handlers []string
		limit    int
		want     []int64
	}{
		{"nil claims every handler", nil, 10, []int64{a1, b1, c1, a2}},
		{"two handlers", []string{"a", "c"}, 10, []int64{a1, c1, a2}},
		{"one handler", []string{"b"}, 10, []int64{b1}},
		{"unknown handler", []string{"zzz"}, 10, nil},
		{"empty list claims nothing", []string{}, 10, nil},
		{"limit applies after the filter", []string{"a", "c"}, 2, []int64{a1, c1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.claimIDs(ClaimParams{Queue: "default", Handlers: tc.handlers, Limit: tc.limit})
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestClaimRollbackLeavesRowsUntouched(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dispatchN(3, InsertJob{})
	before := e.dump(e.tables["jobs"], "id")
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	rows, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.NoError(t, c.Rollback())
	require.Equal(t, before, e.dump(e.tables["jobs"], "id"))
	require.Len(t, e.claimIDs(ClaimParams{Queue: "default", Limit: 10}), 3, "locks released")
}

func TestClaimCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatchN(4, InsertJob{})
	e.exec("UPDATE {jobs} SET attempts = 1 WHERE id = ?", id[2])
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	rows, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 3})
	require.NoError(t, err)
	require.Equal(t, id[:3], idsOf(rows))

	// Rows stay pending, locked, until the claim commits.
	require.Equal(t, StatusPending, e.job(id[0]).Status)

	logs := []LogRow{logRow(id[0], EventStarted, 1), logRow(id[1], EventStarted, 1), logRow(id[2], EventStarted, 2)}
	require.NoError(t, c.Commit(e.ctx, ClaimCommit{WorkerID: "w1", Running: []int64{id[0], id[1], id[2]}, Logs: logs}))

	for i, attempts := range []int{1, 1, 2} {
		j := e.job(id[i])
		require.Equal(t, StatusProcessing, j.Status)
		require.Equal(t, attempts, j.Attempts)
		requireRecent(t, j.ReservedAt, "reserved_at")
		require.Equal(t, String("w1"), j.ReservedBy)
		require.False(t, j.CompletedAt.Valid)
		require.False(t, j.FailedAt.Valid)
	}

	// Not selected: untouched.
	left := e.job(id[3])
	require.Equal(t, StatusPending, left.Status)
	require.Equal(t, 0, left.Attempts)
	require.False(t, left.ReservedAt.Valid)
	require.False(t, left.ReservedBy.Valid)

	// Log rows in the given order, every column written.
	var got []LogRow
	require.NoError(t, e.db.SelectContext(e.ctx, &got, render("SELECT * FROM {logs} ORDER BY id", e.tables)))
	require.Len(t, got, len(logs))
	for i := range logs {
		want := logs[i]
		want.ID, want.CreatedAt = got[i].ID, got[i].CreatedAt
		require.Equal(t, want, got[i], "log row %d", i)
		require.WithinDuration(t, time.Now().UTC(), got[i].CreatedAt, time.Minute)
	}
}

func TestClaimCommitRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatchN(9, InsertJob{})
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	_, err = c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 8})
	require.NoError(t, err)
	// Runs and singles mixed, unsorted; id[8] is not held by this claim.
	running := []int64{id[5], id[0], id[1], id[2], id[7], id[6], id[4]}
	require.NoError(t, c.Commit(e.ctx, ClaimCommit{WorkerID: "w", Running: running}))
	for _, i := range running {
		require.Equal(t, StatusProcessing, e.job(i).Status, i)
	}
	// Selected but not in Running: released untouched.
	require.Equal(t, StatusPending, e.job(id[3]).Status)
	require.Equal(t, StatusPending, e.job(id[8]).Status)
	require.Equal(t, 0, e.job(id[8]).Attempts)
}

func TestClaimCommitFailureChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatchN(5, InsertJob{})
	before := e.dump(e.tables["jobs"], "id")
	claim := func() (*ClaimTx, ClaimCommit) {
		c, err := e.s.BeginClaim(e.ctx)
		require.NoError(t, err)
		rows, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 10})
		require.NoError(t, err)
		require.Len(t, rows, 5)
		return c, ClaimCommit{WorkerID: "w", Running: id, Logs: []LogRow{logRow(id[0], EventStarted, 1)}}
	}
	requireUnchanged := func() {
		t.Helper()
		require.Equal(t, before, e.dump(e.tables["jobs"], "id"))
		require.Zero(t, e.count("SELECT COUNT(*) FROM {logs}"))
		// The claim's locks are gone: everything is claimable again.
		require.Equal(t, id, e.claimIDs(ClaimParams{Queue: "default", Limit: 10}))
	}

	t.Run("cancelled context", func(t *testing.T) {
		c, f := claim()
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		require.ErrorIs(t, c.Commit(ctx, f), context.Canceled)
		requireUnchanged()
	})
	t.Run("error after the row updates", func(t *testing.T) {
		c, f := claim()
		// Strict mode rejects an unknown ENUM value: the log INSERT is the
		// last statement, so the UPDATE before it has run.
		f.Logs = append(f.Logs, LogRow{JobID: Int(id[1]), Handler: "noop", Queue: "default", Event: "bogus"})
		err := c.Commit(e.ctx, f)
		require.ErrorContains(t, err, "insert logs")
		requireUnchanged()
	})
}

// TestClaimConcurrentWindowsSkipLocked holds one window open while another
// claims: the second skips the locked rows instead of waiting or sharing.
func TestClaimConcurrentWindowsSkipLocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	all := e.dispatchN(10, InsertJob{})

	type result struct {
		ids []int64
		err error
	}
	aSelected, bSelected := make(chan struct{}), make(chan struct{})
	resA, resB := make(chan result, 1), make(chan result, 1)
	go func() {
		r := result{}
		defer func() { resA <- r }()
		defer close(aSelected)
		c, err := e.s.BeginClaim(e.ctx)
		if r.err = err; err != nil {
			return
		}
		rows, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 5})
		if r.err = err; err != nil {
			_ = c.Rollback()
			return
		}
		r.ids = idsOf(rows)
		aSelected <- struct{}{}
		<-bSelected // A keeps its locks until B has selected
		r.err = c.Commit(e.ctx, ClaimCommit{WorkerID: "A", Running: r.ids})
	}()
	go func() {
		r := result{}
		defer func() { resB <- r }()
		defer close(bSelected)
		if _, ok := <-aSelected; !ok {
			r.err = fmt.Errorf("A failed")
			return
		}
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second) // SKIP LOCKED: no waiting
		defer cancel()
		c, err := e.s.BeginClaim(ctx)
		if r.err = err; err != nil {
			return
		}
		rows, err := c.Select(ctx, ClaimParams{Queue: "default", Limit: 10})
		if r.err = err; err != nil {
			_ = c.Rollback()
			return
		}
		r.ids = idsOf(rows)
		bSelected <- struct{}{}
		r.err = c.Commit(ctx, ClaimCommit{WorkerID: "B", Running: r.ids})
	}()
	a, b := <-resA, <-resB
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	require.Equal(t, all[:5], a.ids)
	require.Equal(t, all[5:], b.ids)
	for i, id := range all {
		j := e.job(id)
		require.Equal(t, StatusProcessing, j.Status)
		require.Equal(t, 1, j.Attempts)
		want := "A"
		if i >= 5 {
			want = "B"
		}
		require.Equal(t, String(want), j.ReservedBy)
	}
}

// TestClaimConcurrentNeverDuplicates runs several claimers to exhaustion and
// checks every job was claimed exactly once.
func TestClaimConcurrentNeverDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jobs := make([]InsertJob, 80)
	for i := range jobs {
		jobs[i] = InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3, Priority: i % 4}
	}
	n, err := e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	require.Equal(t, 80, n)

	var mu sync.Mutex
	claimed := map[int64]string{}
	var dups []int64
	var errs []error
	var wg sync.WaitGroup
	for w := range 4 {
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				c, err := e.s.BeginClaim(e.ctx)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				rows, err := c.Select(e.ctx, ClaimParams{Queue: "default", Limit: 3})
				if err != nil || len(rows) == 0 {
					_ = c.Rollback()
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				ids := idsOf(rows)
				var logs []LogRow
				for _, id := range ids {
					logs = append(logs, logRow(id, EventStarted, 1))
				}
				if err := c.Commit(e.ctx, ClaimCommit{WorkerID: worker, Running: ids, Logs: logs}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, id := range ids {
					if _, seen := claimed[id]; seen {
						dups = append(dups, id)
					}
					claimed[id] = worker
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	require.Empty(t, dups)
	require.Len(t, claimed, 80)
	require.Equal(t, 80, e.count("SELECT COUNT(*) FROM {jobs} WHERE status = 'processing' AND attempts = 1"))
	require.Equal(t, 80, e.count("SELECT COUNT(*) FROM {logs}"))
	require.Zero(t, e.count("SELECT COUNT(*) FROM (SELECT job_id FROM {logs} WHERE event = 'started' GROUP BY job_id HAVING COUNT(*) > 1) d"))
	for id, w := range claimed {
		require.Equal(t, String(w), e.job(id).ReservedBy)
	}
}

func TestIDRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    []int64
		where string
		args  []any
	}{
		{"empty", nil, "", nil},
		{"single", []int64{5}, "id IN (?)", []any{int64(5)}},
		{"one run", []int64{1, 2, 3}, "id BETWEEN ? AND ?", []any{int64(1), int64(3)}},
		{"pair is a run", []int64{8, 7}, "id BETWEEN ? AND ?", []any{int64(7), int64(8)}},
		{"unsorted run", []int64{3, 1, 2}, "id BETWEEN ? AND ?", []any{int64(1), int64(3)}},
		{"singles share one IN", []int64{8, 4, 6}, "id IN (?,?,?)", []any{int64(4), int64(6), int64(8)}},
		{"duplicates of one id", []int64{1, 1, 1}, "id IN (?)", []any{int64(1)}},
		{"duplicates inside a run", []int64{2, 3, 2, 3}, "id BETWEEN ? AND ?", []any{int64(2), int64(3)}},
		{
			"runs then singles",
			[]int64{10, 3, 1, 2, 2, 7, 9, 12, 11, 20},
			"id BETWEEN ? AND ? OR id BETWEEN ? AND ? OR id IN (?,?)",
			[]any{int64(1), int64(3), int64(9), int64(12), int64(7), int64(20)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			where, args := idRanges(in)
			require.Equal(t, tc.where, where)
			require.Equal(t, tc.args, args)
			require.Equal(t, tc.in, in, "input not modified")
		})
	}
}

// TestIDRangesSelectExactly runs generated WHERE clauses against a real
// table with holes in its ids.
func TestIDRangesSelectExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jobs := make([]InsertJob, 60)
	for i := range jobs {
		jobs[i] = InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3}
	}
	_, err := e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	e.exec("DELETE FROM {jobs} WHERE id IN (7, 20, 21, 45)")
	var ids []int64
	require.NoError(t, e.db.SelectContext(e.ctx, &ids, render("SELECT id FROM {jobs} ORDER BY id", e.tables)))
	require.Len(t, ids, 56)

	subsets := [][]int64{
		{ids[0]}, ids, ids[:10], {ids[0], ids[2], ids[4]},
		{ids[5], ids[6], ids[7]}, // 6, 8: neighbours across the deleted 7 are not a run
		{ids[20], ids[19], ids[19], ids[40], ids[55]},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		var s []int64
		for _, id := range ids {
			if rng.IntN(3) == 0 {
				s = append(s, id)
			}
		}
		if len(s) > 0 {
			subsets = append(subsets, s)
		}
	}
	for i, s := range subsets {
		where, args := idRanges(s)
		var got []int64
		require.NoError(t, e.db.SelectContext(e.ctx, &got, render("SELECT id FROM {jobs} WHERE "+where+" ORDER BY id", e.tables), args...))
		want := slices.Clone(s)
		slices.Sort(want)
		want = slices.Compact(want)
		require.Equal(t, want, got, "subset %d: %s", i, where)
	}
}

func TestClaimProcessingByGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, g := range []struct {
		group  string
		status string
	}{{"g1", "processing"}, {"g1", "processing"}, {"g1", "pending"}, {"g1", "completed"}, {"g2", "processing"}, {"g3", "buried"}} {
		id := e.dispatch(InsertJob{Queue: "other", ConcurrencyGroup: g.group, ConcurrencyLimit: 2})
		e.exec("UPDATE {jobs} SET status = ? WHERE id = ?", g.status, id)
	}
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	defer func() { _ = c.Rollback() }()
	got, err := c.ProcessingByGroup(e.ctx, []string{"g1", "g2", "g3", "g4"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"g1": 2, "g2": 1}, got)
	got, err = c.ProcessingByGroup(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// groupLockHeld reports whether some connection holds the named lock of a
// concurrency group (kind "" as in LockGroups).
func (s *Store) groupLockHeld(ctx context.Context, group string) (bool, error) {
	var id sql.NullInt64
	if err := s.db.GetContext(ctx, &id, s.query(qGroupLockHolder), s.groupLockKey(group)); err != nil {
		return false, err
	}
	return id.Valid, nil
}

func TestClaimLockGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err := a.LockGroups(e.ctx, []string{"b", "a", "a"}, time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, locked, "sorted, once each")

	b, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err = b.LockGroups(e.ctx, []string{"c", "a"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, locked, "a is held by the other window")
	require.NoError(t, b.Rollback())

	// The lock names are per jobs table and database: another install's
	// group "a" is free, in this database or in another with our prefix.
	other, err := New(e.db, mustResolve(t, Naming{DBPrefix: "site2_"}), e.clk)
	require.NoError(t, err)
	require.NotEqual(t, e.s.groupLockKey("a"), other.groupLockKey("a"))
	freeThere := func(s *Store) {
		o, err := s.BeginClaim(e.ctx)
		require.NoError(t, err)
		locked, err := o.LockGroups(e.ctx, []string{"a"}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, locked)
		require.NoError(t, o.Rollback())
	}
	freeThere(other)
	t.Run("another database", func(t *testing.T) {
		freeThere(newEnv(t).s)
	})

	// Ending the claim (here: a Commit) releases its locks.
	require.NoError(t, a.Commit(e.ctx, ClaimCommit{WorkerID: "w"}))
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	locked, err = c.LockGroups(e.ctx, []string{"a", "b"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, locked)
	require.NoError(t, c.Rollback())
	held, err := e.s.groupLockHeld(e.ctx, "a")
	require.NoError(t, err)
	require.False(t, held, "released at rollback")
}

// TestAnyDue: the idle look sees exactly the rows a claim could take:
// pending and due, in the queues asked about; delayed, processing and
// other queues' rows are not due, whatever their claim predicate says.
func TestAnyDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	due := func(queues ...string) bool {
		t.Helper()
		ok, err := e.s.AnyDue(e.ctx, queues)
		require.NoError(t, err)
		return ok
	}
	require.False(t, due("default"), "an empty table")
	require.False(t, due(), "no queues")

	later := e.dispatch(InsertJob{Queue: "mail"})
	e.exec("UPDATE {jobs} SET available_at = NOW() + INTERVAL 1 HOUR WHERE id = ?", later)
	busy := e.dispatch(InsertJob{Queue: "mail"})
	e.exec("UPDATE {jobs} SET status = 'processing' WHERE id = ?", busy)
	e.dispatch(InsertJob{Queue: "other"})
	require.False(t, due("mail"), "a delayed job and a processing one")
	require.True(t, due("mail", "other"), "a due job in the second queue")

	// A row another claim holds locked is still due: the claim that
	// follows finds it locked and takes nothing, as it would have anyway.
	id := e.dispatch(InsertJob{Queue: "mail"})
	c, err := e.s.BeginClaim(e.ctx)
	require.NoError(t, err)
	defer func() { _ = c.Rollback() }()
	rows, err := c.Select(e.ctx, ClaimParams{Queue: "mail", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{id}, idsOf(rows))
	require.True(t, due("mail"), "a due row locked by an open claim")
}
