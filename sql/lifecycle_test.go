package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func completion(a Attempt) Completion {
	l := logRow(a.ID, EventCompleted, a.Attempt)
	l.DurationMS, l.MemoryPeakKB = Int(3), Int(1024)
	return Completion{Attempt: a, Log: l}
}

func TestCompleteJobsFencing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatchN(4, InsertJob{})
	rows := e.claimRunning("w1", "default", 2) // id[0], id[1]: attempt 1 held by w1
	require.Equal(t, id[:2], idsOf(rows))
	other := e.hold(id[2], "w2", 1) // held by another worker
	stale := e.hold(id[3], "w1", 2) // w1 again, but a later attempt
	missing := Attempt{ID: 999999, Attempt: 1, WorkerID: "w1"}

	batch := []Completion{
		completion(Attempt{ID: id[0], Attempt: 1, WorkerID: "w1"}),
		completion(Attempt{ID: id[1], Attempt: 1, WorkerID: "w1"}),
		completion(Attempt{ID: other.ID, Attempt: 1, WorkerID: "w1"}),
		completion(Attempt{ID: stale.ID, Attempt: 1, WorkerID: "w1"}),
		completion(missing),
	}
	beforeRefused := e.dump(e.tables["jobs"], "id")[2:]

	res, err := e.s.CompleteJobs(e.ctx, batch)
	require.NoError(t, err)
	require.Equal(t, []int64{id[0], id[1]}, res.Completed)
	require.Empty(t, res.Already)
	require.Equal(t, []int64{id[2], id[3], 999999}, res.Refused)

	for _, i := range id[:2] {
		j := e.job(i)
		require.Equal(t, StatusCompleted, j.Status)
		requireRecent(t, j.CompletedAt, "completed_at")
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, String("w1"), j.ReservedBy, "reserved_by stays for retried batches")
		got := e.logs(i)
		require.Len(t, got, 1)
		require.Equal(t, EventCompleted, got[0].Event)
		require.Equal(t, Int(1), got[0].Attempt)
		require.Equal(t, Int(3), got[0].DurationMS)
		require.Equal(t, Int(1024), got[0].MemoryPeakKB)
	}
	require.Equal(t, beforeRefused, e.dump(e.tables["jobs"], "id")[2:], "refused rows unchanged")
	require.Equal(t, 2, e.count("SELECT COUNT(*) FROM {logs}"))

	// The same batch again (a completion retried after a lost connection).
	res, err = e.s.CompleteJobs(e.ctx, batch)
	require.NoError(t, err)
	require.Empty(t, res.Completed)
	require.Equal(t, []int64{id[0], id[1]}, res.Already)
	require.Equal(t, []int64{id[2], id[3], 999999}, res.Refused)
	require.Equal(t, 2, e.count("SELECT COUNT(*) FROM {logs}"), "no duplicate log rows")

	res, err = e.s.CompleteJobs(e.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, CompleteResult{}, res)
}

// Every attempt of the batch holds its row (two attempt numbers, one
// worker): the fenced UPDATE path completes them all, logs included.
func TestCompleteJobsAllHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatchN(5, InsertJob{})
	e.claimRunning("w1", "default", 3)
	retried := e.hold(id[3], "w1", 2)
	batch := []Completion{
		completion(Attempt{ID: id[2], Attempt: 1, WorkerID: "w1"}),
		completion(Attempt{ID: id[0], Attempt: 1, WorkerID: "w1"}),
		completion(retried),
		completion(Attempt{ID: id[1], Attempt: 1, WorkerID: "w1"}),
	}
	res, err := e.s.CompleteJobs(e.ctx, batch)
	require.NoError(t, err)
	require.ElementsMatch(t, id[:4], res.Completed)
	require.Empty(t, res.Refused)
	for _, i := range id[:4] {
		require.Equal(t, StatusCompleted, e.job(i).Status)
		require.Len(t, e.logs(i), 1)
	}
	require.Equal(t, StatusPending, e.job(id[4]).Status)
	require.Equal(t, 4, e.count("SELECT COUNT(*) FROM {logs}"))
}

func TestFailJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("retry", func(t *testing.T) {
		a := e.hold(e.dispatch(InsertJob{}), "w1", 2)
		failed := logRow(a.ID, EventFailed, 2)
		failed.ErrorMessage, failed.ErrorClass, failed.DurationMS = String("boom"), String("RuntimeException"), Int(7)
		ok, err := e.s.FailJob(e.ctx, Failure{Attempt: a, Delay: 120 * time.Second, ErrorMessage: "boom",
			Logs: []LogRow{failed, logRow(a.ID, EventRetried, 2)}})
		require.NoError(t, err)
		require.True(t, ok)
		j := e.job(a.ID)
		require.Equal(t, StatusPending, j.Status)
		require.Equal(t, 2, j.Attempts, "attempts kept")
		require.Equal(t, e.clk.Now().Add(120*time.Second), j.AvailableAt)
		require.False(t, j.ReservedAt.Valid)
		require.False(t, j.ReservedBy.Valid)
		require.False(t, j.ErrorMessage.Valid, "retry clears error_message (it is in the log)")
		require.Equal(t, []string{"failed#2", "retried#2"}, events(e.logs(a.ID)))
		require.Equal(t, String("boom"), e.logs(a.ID)[0].ErrorMessage)
	})

	t.Run("bury", func(t *testing.T) {
		a := e.hold(e.dispatch(InsertJob{}), "w1", 3)
		buried := logRow(a.ID, EventBuried, 3)
		buried.ErrorMessage = String("fatal")
		ok, err := e.s.FailJob(e.ctx, Failure{Attempt: a, Bury: true, ErrorMessage: "fatal", Logs: []LogRow{buried}})
		require.NoError(t, err)
		require.True(t, ok)
		j := e.job(a.ID)
		require.Equal(t, StatusBuried, j.Status)
		require.Equal(t, 3, j.Attempts)
		requireRecent(t, j.FailedAt, "failed_at")
		require.Equal(t, String("fatal"), j.ErrorMessage)
		require.Equal(t, []string{"buried#3"}, events(e.logs(a.ID)))
	})

	for _, tc := range []struct {
		name  string
		setup func(id int64) Attempt // returns the attempt that tries to fail it
	}{
		{"other worker", func(id int64) Attempt { e.hold(id, "w2", 1); return Attempt{ID: id, Attempt: 1, WorkerID: "w1"} }},
		{"other attempt", func(id int64) Attempt { e.hold(id, "w1", 2); return Attempt{ID: id, Attempt: 1, WorkerID: "w1"} }},
		{"already completed", func(id int64) Attempt {
			a := e.hold(id, "w1", 1)
			e.exec("UPDATE {jobs} SET status = 'completed', completed_at = NOW() WHERE id = ?", id)
			return a
		}},
		{"pending again", func(id int64) Attempt { return Attempt{ID: id, Attempt: 0, WorkerID: ""} }},
		{"deleted", func(id int64) Attempt {
			e.exec("DELETE FROM {jobs} WHERE id = ?", id)
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
	} {
		for _, bury := range []bool{false, true} {
			t.Run(fmt.Sprintf("refused: %s, bury=%v", tc.name, bury), func(t *testing.T) {
				id := e.dispatch(InsertJob{})
				a := tc.setup(id)
				before := e.dump(e.tables["jobs"], "id")
				ok, err := e.s.FailJob(e.ctx, Failure{Attempt: a, Bury: bury, ErrorMessage: "x",
					Logs: []LogRow{logRow(id, EventFailed, a.Attempt)}})
				require.NoError(t, err)
				require.False(t, ok)
				require.Equal(t, before, e.dump(e.tables["jobs"], "id"))
				require.Empty(t, e.logs(id))
			})
		}
	}
}

func TestUnclaimJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// a: second attempt held by w1, with its first attempt's history.
	a := e.hold(e.dispatch(InsertJob{}), "w1", 2)
	// b: a processing row with attempts 0 (attempts never go below 0).
	b := e.hold(e.dispatch(InsertJob{}), "w1", 0)
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{
		logRow(a.ID, EventStarted, 1), logRow(a.ID, EventFailed, 1), logRow(a.ID, EventRetried, 1),
		logRow(a.ID, EventStarted, 2),
		logRow(b.ID, EventStarted, 0),
	}))

	n, err := e.s.UnclaimJobs(e.ctx, []Attempt{a, b})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	ja := e.job(a.ID)
	require.Equal(t, StatusPending, ja.Status)
	require.Equal(t, 1, ja.Attempts, "the attempt is given back")
	require.False(t, ja.ReservedAt.Valid)
	require.False(t, ja.ReservedBy.Valid)
	require.Equal(t, []string{"started#1", "failed#1", "retried#1"}, events(e.logs(a.ID)),
		"only the started row of the handed-back attempt goes")

	jb := e.job(b.ID)
	require.Equal(t, StatusPending, jb.Status)
	require.Equal(t, 0, jb.Attempts)
	require.Empty(t, e.logs(b.ID))

	n, err = e.s.UnclaimJobs(e.ctx, nil)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestUnclaimJobsOnlyHeldRows hands back attempts that no longer hold their
// rows: neither the row nor its log rows may change.
func TestUnclaimJobsOnlyHeldRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		setup func(id int64) Attempt
	}{
		{"row held by another worker", func(id int64) Attempt {
			e.hold(id, "w2", 1)
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
		{"row completed by this attempt", func(id int64) Attempt {
			a := e.hold(id, "w1", 1)
			e.exec("UPDATE {jobs} SET status = 'completed', completed_at = NOW() WHERE id = ?", id)
			return a
		}},
		{"row re-claimed by this worker in a later attempt", func(id int64) Attempt {
			e.hold(id, "w1", 2)
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
		{"row already handed back (hand-back retried)", func(id int64) Attempt {
			// Handed back once already; the same hand-back retried.
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.dispatch(InsertJob{})
			at := tc.setup(id)
			require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(id, EventStarted, 1), logRow(id, EventStarted, 2)}))
			before := e.dump(e.tables["jobs"], "id")
			n, err := e.s.UnclaimJobs(e.ctx, []Attempt{at})
			require.NoError(t, err)
			require.Zero(t, n, "nothing handed back")
			require.Equal(t, before, e.dump(e.tables["jobs"], "id"), "row unchanged")
			require.Equal(t, []string{"started#1", "started#2"}, events(e.logs(id)), "log rows unchanged")
		})
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatch(InsertJob{})
	e.claimRunning("w1", "default", 1)
	a := Attempt{ID: id, Attempt: 1, WorkerID: "w1"}

	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", id)
	ok, err := e.s.Heartbeat(e.ctx, a, nil)
	require.NoError(t, err)
	require.True(t, ok)
	j := e.job(id)
	requireRecent(t, j.ReservedAt, "reserved_at")
	require.WithinDuration(t, time.Now().UTC(), j.ReservedAt.Time, 10*time.Second)
	require.False(t, j.HeartbeatData.Valid, "no progress, heartbeat_data untouched")

	// Twice within one second: nothing changes, still held.
	for range 2 {
		ok, err = e.s.Heartbeat(e.ctx, a, nil)
		require.NoError(t, err)
		require.True(t, ok)
	}

	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", id)
	ok, err = e.s.Heartbeat(e.ctx, a, []byte(`{"processed":50,"total":100}`))
	require.NoError(t, err)
	require.True(t, ok)
	j = e.job(id)
	require.WithinDuration(t, time.Now().UTC(), j.ReservedAt.Time, 10*time.Second)
	require.JSONEq(t, `{"processed":50,"total":100}`, j.HeartbeatData.String)
	// Same progress in the same second: still true.
	ok, err = e.s.Heartbeat(e.ctx, a, []byte(`{"processed":50,"total":100}`))
	require.NoError(t, err)
	require.True(t, ok)
	// No progress later: heartbeat_data is never cleared.
	ok, err = e.s.Heartbeat(e.ctx, a, nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.JSONEq(t, `{"processed":50,"total":100}`, e.job(id).HeartbeatData.String)
}

func TestHeartbeatNotHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		setup func(id int64) Attempt
	}{
		{"other worker", func(id int64) Attempt { e.hold(id, "w2", 1); return Attempt{ID: id, Attempt: 1, WorkerID: "w1"} }},
		{"completed", func(id int64) Attempt {
			a := e.hold(id, "w1", 1)
			e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", id)
			return a
		}},
		{"pending", func(id int64) Attempt { return Attempt{ID: id, Attempt: 0, WorkerID: "w1"} }},
		{"deleted", func(id int64) Attempt {
			e.exec("DELETE FROM {jobs} WHERE id = ?", id)
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
		{"this worker, later attempt", func(id int64) Attempt {
			// Rescued by a sweep and claimed again by the same worker: the
			// first attempt's handler no longer holds the row.
			e.hold(id, "w1", 2)
			return Attempt{ID: id, Attempt: 1, WorkerID: "w1"}
		}},
	} {
		for _, progress := range [][]byte{nil, []byte(`{"n":1}`)} {
			t.Run(fmt.Sprintf("%s, progress=%v", tc.name, progress != nil), func(t *testing.T) {
				id := e.dispatch(InsertJob{})
				a := tc.setup(id)
				e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", id)
				before := e.dump(e.tables["jobs"], "id")
				ok, err := e.s.Heartbeat(e.ctx, a, progress)
				require.NoError(t, err)
				require.False(t, ok)
				require.Equal(t, before, e.dump(e.tables["jobs"], "id"))
			})
		}
	}
}

func TestTouchJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	held := e.dispatchN(3, InsertJob{})
	e.claimRunning("w1", "default", 3)
	other := e.hold(e.dispatch(InsertJob{}), "w2", 1).ID
	done := e.hold(e.dispatch(InsertJob{}), "w1", 1).ID
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", done)
	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR")

	lost, err := e.s.TouchJobs(e.ctx, "w1", append(slices.Clone(held), other, done, 999999))
	require.NoError(t, err)
	require.Equal(t, []int64{other, done, 999999}, lost)
	for _, id := range held {
		require.WithinDuration(t, time.Now().UTC(), e.job(id).ReservedAt.Time, 10*time.Second)
	}
	for _, id := range []int64{other, done} {
		require.WithinDuration(t, time.Now().UTC().Add(-time.Hour), e.job(id).ReservedAt.Time, time.Minute, "not ours: untouched")
	}

	// Touching again within the same second changes no row, yet nothing is lost.
	for range 2 {
		lost, err = e.s.TouchJobs(e.ctx, "w1", held)
		require.NoError(t, err)
		require.Empty(t, lost)
	}
	lost, err = e.s.TouchJobs(e.ctx, "w1", nil)
	require.NoError(t, err)
	require.Empty(t, lost)
}

func TestRecoverStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stale := func(attempts int) int64 {
		id := e.dispatch(InsertJob{Queue: "mail", Handler: "send"})
		e.hold(id, "dead", attempts)
		e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", id)
		return id
	}
	retry := stale(1)
	bury := stale(3)
	fresh := e.hold(e.dispatch(InsertJob{}), "alive", 1).ID
	pending := e.dispatch(InsertJob{})
	completed := stale(1)
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", completed)
	res := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{}', 1)")
	wf, err := res.LastInsertId()
	require.NoError(t, err)
	workflow := e.dispatch(InsertJob{WorkflowID: Int(wf), StepIndex: Int(0)})
	e.hold(workflow, "dead", 1)
	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", workflow)
	untouched := []int64{fresh, pending, completed, workflow}
	before := e.dump(e.tables["jobs"], "id")

	var decided []int64
	cutoff := time.Now().UTC().Add(-10 * time.Minute) // QUEUETY_STALE_TIMEOUT
	retried, buried, err := e.s.RecoverStale(e.ctx, cutoff, 100, func(j *JobRow) StaleDecision {
		decided = append(decided, j.ID)
		return StaleDecision{Bury: j.Attempts >= j.MaxAttempts, Delay: 240 * time.Second}
	})
	require.NoError(t, err)
	require.Equal(t, 1, retried)
	require.Equal(t, 1, buried)
	require.Equal(t, []int64{retry, bury}, decided)

	jr := e.job(retry)
	require.Equal(t, StatusPending, jr.Status)
	require.Equal(t, 1, jr.Attempts, "attempts stay")
	require.False(t, jr.ReservedAt.Valid)
	require.False(t, jr.ReservedBy.Valid)
	require.Equal(t, e.clk.Now().Add(240*time.Second), jr.AvailableAt)
	lr := e.logs(retry)
	require.Len(t, lr, 1)
	require.Equal(t, EventRetried, lr[0].Event)
	require.Equal(t, Int(1), lr[0].Attempt)
	require.Equal(t, "send", lr[0].Handler)
	require.Equal(t, "mail", lr[0].Queue)
	require.False(t, lr[0].ErrorMessage.Valid)

	jb := e.job(bury)
	require.Equal(t, StatusBuried, jb.Status)
	require.Equal(t, String("Stale: worker died without completing."), jb.ErrorMessage)
	requireRecent(t, jb.FailedAt, "failed_at")
	require.Equal(t, 3, jb.Attempts)
	lb := e.logs(bury)
	require.Len(t, lb, 1)
	require.Equal(t, EventBuried, lb[0].Event)
	require.Equal(t, String(StaleMessage), lb[0].ErrorMessage)
	require.False(t, lb[0].Attempt.Valid, "spec §5.1: the stale buried row has no attempt")
	require.False(t, lb[0].DurationMS.Valid)
	require.False(t, lb[0].ErrorClass.Valid)
	require.Equal(t, Int(bury), lb[0].JobID)
	require.Equal(t, "send", lb[0].Handler)
	require.Equal(t, "mail", lb[0].Queue)

	after := e.dump(e.tables["jobs"], "id")
	for i, row := range before {
		if contains([]string{fmt.Sprint(retry), fmt.Sprint(bury)}, row["id"]) {
			continue
		}
		require.Equal(t, row, after[i], "row %s untouched", row["id"])
	}
	for _, id := range untouched {
		require.Empty(t, e.logs(id))
	}

	// Nothing left to do.
	retried, buried, err = e.s.RecoverStale(e.ctx, cutoff, 100, func(*JobRow) StaleDecision { panic("no stale rows") })
	require.NoError(t, err)
	require.Zero(t, retried+buried)
}

func TestRecoverStaleLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range e.dispatchN(5, InsertJob{}) {
		e.hold(id, "dead", 1)
	}
	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR")
	retry := func(*JobRow) StaleDecision { return StaleDecision{} }
	cutoff := time.Now().UTC().Add(-time.Minute)
	r, b, err := e.s.RecoverStale(e.ctx, cutoff, 2, retry)
	require.NoError(t, err)
	require.Equal(t, 2, r)
	require.Zero(t, b)
	require.Equal(t, 3, e.count("SELECT COUNT(*) FROM {jobs} WHERE status = 'processing'"))
	// Cutoff is exclusive and compared with reserved_at.
	r, _, err = e.s.RecoverStale(e.ctx, time.Now().UTC().Add(-2*time.Hour), 100, retry)
	require.NoError(t, err)
	require.Zero(t, r)
}

// TestRecoverStaleConcurrent runs several sweepers at once: each stale row
// is acted on exactly once.
func TestRecoverStaleConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.dispatchN(30, InsertJob{})
	for i, id := range ids {
		e.hold(id, "dead", 1+i%3)
	}
	e.exec("UPDATE {jobs} SET reserved_at = NOW() - INTERVAL 1 HOUR")
	cutoff := time.Now().UTC().Add(-10 * time.Minute)

	var mu sync.Mutex
	var totalR, totalB int
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			<-start
			for {
				r, b, err := e.s.RecoverStale(e.ctx, cutoff, 4, func(j *JobRow) StaleDecision {
					time.Sleep(2 * time.Millisecond) // widen the window for overlap
					return StaleDecision{Bury: j.Attempts >= 3}
				})
				mu.Lock()
				totalR += r
				totalB += b
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil || r+b == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, errs)
	require.Equal(t, 20, totalR)
	require.Equal(t, 10, totalB)
	require.Equal(t, 20, e.count("SELECT COUNT(*) FROM {logs} WHERE event = 'retried'"))
	require.Equal(t, 10, e.count("SELECT COUNT(*) FROM {logs} WHERE event = 'buried'"))
	require.Zero(t, e.count("SELECT COUNT(*) FROM (SELECT job_id FROM {logs} GROUP BY job_id HAVING COUNT(*) <> 1) d"))
	require.Equal(t, 20, e.count("SELECT COUNT(*) FROM {jobs} WHERE status = 'pending'"))
	require.Equal(t, 10, e.count("SELECT COUNT(*) FROM {jobs} WHERE status = 'buried'"))
}

// TestRecoverStaleWithoutReservedAt: a processing row whose reserved_at
// is NULL (PHP's predicate never matches it) is aged from available_at and
// rescued with the plugin's rules: retried while attempts are left,
// buried with the stale message at max attempts; a fresh one is left.
func TestRecoverStaleWithoutReservedAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lost := func(attempts int, availableAgo string) int64 {
		id := e.dispatch(InsertJob{Queue: "mail", Handler: "send"})
		e.hold(id, "dead", attempts)
		e.exec("UPDATE {jobs} SET reserved_at = NULL, available_at = NOW() - INTERVAL "+availableAgo+" WHERE id = ?", id)
		return id
	}
	retry, bury, fresh := lost(1, "1 HOUR"), lost(3, "1 HOUR"), lost(1, "1 MINUTE")
	wf := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{}', 1)")
	wfID, err := wf.LastInsertId()
	require.NoError(t, err)
	step := e.dispatch(InsertJob{WorkflowID: Int(wfID), StepIndex: Int(0)})
	e.hold(step, "dead", 1)
	e.exec("UPDATE {jobs} SET reserved_at = NULL, available_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", step)

	cutoff := time.Now().UTC().Add(-10 * time.Minute)
	retried, buried, err := e.s.RecoverStale(e.ctx, cutoff, 100, func(j *JobRow) StaleDecision {
		return StaleDecision{Bury: j.Attempts >= j.MaxAttempts}
	})
	require.NoError(t, err)
	require.Equal(t, 1, retried)
	require.Equal(t, 1, buried)
	require.Equal(t, StatusPending, e.job(retry).Status)
	require.Equal(t, 1, e.job(retry).Attempts)
	jb := e.job(bury)
	require.Equal(t, StatusBuried, jb.Status)
	require.Equal(t, String(StaleMessage), jb.ErrorMessage)
	require.Equal(t, StatusProcessing, e.job(fresh).Status, "younger than the stale timeout")
	require.Equal(t, StatusProcessing, e.job(step).Status, "workflow steps have their own sweep")

	r, rows, err := e.s.RecoverStaleWorkflowSteps(e.ctx, cutoff, 100, func(*JobRow) StaleStepDecision { return StaleStepDecision{} })
	require.NoError(t, err)
	require.Equal(t, 1, r)
	require.Empty(t, rows)
	require.Equal(t, StatusPending, e.job(step).Status)
}

// TestRecoverStaleReservedFarInFuture: a processing row reserved in 2099
// (a hand edit or a broken tool) is rescued by the next sweep instead of
// waiting until then, plain jobs and workflow steps alike; a row reserved
// a few hours ahead (a writer's session in another time zone) is left.
func TestRecoverStaleReservedFarInFuture(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	held := func(reservedAt string) int64 {
		id := e.dispatch(InsertJob{Queue: "mail", Handler: "send"})
		e.hold(id, "dead", 1)
		e.exec("UPDATE {jobs} SET reserved_at = "+reservedAt+" WHERE id = ?", id)
		return id
	}
	far, skewed := held("'2099-01-01 00:00:00'"), held("NOW() + INTERVAL 10 HOUR")
	wf := e.exec("INSERT INTO {workflows} (name, status, state, total_steps) VALUES ('wf', 'running', '{}', 1)")
	wfID, err := wf.LastInsertId()
	require.NoError(t, err)
	step := e.dispatch(InsertJob{WorkflowID: Int(wfID), StepIndex: Int(0)})
	e.hold(step, "dead", 1)
	e.exec("UPDATE {jobs} SET reserved_at = '2099-01-01 00:00:00' WHERE id = ?", step)

	cutoff := time.Now().UTC().Add(-10 * time.Minute)
	retried, buried, err := e.s.RecoverStale(e.ctx, cutoff, 100, func(*JobRow) StaleDecision { return StaleDecision{} })
	require.NoError(t, err)
	require.Equal(t, 1, retried)
	require.Zero(t, buried)
	require.Equal(t, StatusPending, e.job(far).Status)
	require.Equal(t, StatusProcessing, e.job(skewed).Status, "within the future tolerance")

	r, rows, err := e.s.RecoverStaleWorkflowSteps(e.ctx, cutoff, 100, func(*JobRow) StaleStepDecision { return StaleStepDecision{} })
	require.NoError(t, err)
	require.Equal(t, 1, r)
	require.Empty(t, rows)
	require.Equal(t, StatusPending, e.job(step).Status)
}
