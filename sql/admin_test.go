package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	paused := func() []string {
		t.Helper()
		qs, err := e.s.PausedQueues(e.ctx)
		require.NoError(t, err)
		return qs
	}
	require.Empty(t, paused())
	for range 2 { // idempotent
		require.NoError(t, e.s.PauseQueue(e.ctx, "mail"))
	}
	require.NoError(t, e.s.PauseQueue(e.ctx, "bulk"))
	require.Equal(t, []string{"bulk", "mail"}, paused())
	require.Equal(t, 2, e.count("SELECT COUNT(*) FROM {queue_states}"))
	require.Equal(t, 2, e.count("SELECT COUNT(*) FROM {queue_states} WHERE paused = 1 AND paused_at > NOW() - INTERVAL 1 MINUTE"))

	for range 2 { // idempotent; resume deletes the row, as Queuety does
		require.NoError(t, e.s.ResumeQueue(e.ctx, "mail"))
	}
	require.Equal(t, []string{"bulk"}, paused())
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {queue_states}"))
	require.NoError(t, e.s.ResumeQueue(e.ctx, "never-paused"))

	// A row the plugin left with paused = 0 is not a paused queue.
	e.exec("INSERT INTO {queue_states} (queue, paused) VALUES ('old', 0)")
	require.Equal(t, []string{"bulk"}, paused())
	// Pausing it again sets the flag.
	require.NoError(t, e.s.PauseQueue(e.ctx, "old"))
	require.Equal(t, []string{"bulk", "old"}, paused())
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st, err := e.s.Stats(e.ctx)
	require.NoError(t, err)
	require.Empty(t, st)

	e.dispatchN(2, InsertJob{})
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", e.dispatch(InsertJob{}))
	e.hold(e.dispatch(InsertJob{}), "w", 1)
	e.exec("UPDATE {jobs} SET status = 'buried' WHERE id = ?", e.dispatch(InsertJob{Queue: "mail"}))
	e.exec("UPDATE {jobs} SET status = 'failed' WHERE id = ?", e.dispatch(InsertJob{Queue: "mail"}))
	require.NoError(t, e.s.PauseQueue(e.ctx, "mail"))
	require.NoError(t, e.s.PauseQueue(e.ctx, "idle"))

	st, err = e.s.Stats(e.ctx)
	require.NoError(t, err)
	byQueue := map[string]QueueStats{}
	for _, q := range st {
		require.Len(t, q.Counts, 5, q.Queue)
		for _, s := range Statuses {
			require.Contains(t, q.Counts, s, "queue %s lacks %s", q.Queue, s)
		}
		byQueue[q.Queue] = q
	}
	require.Len(t, byQueue, 3)
	require.Equal(t, QueueStats{Queue: "default", Counts: map[string]int{"pending": 2, "processing": 1, "completed": 1, "failed": 0, "buried": 0}}, byQueue["default"])
	require.Equal(t, QueueStats{Queue: "mail", Paused: true, Counts: map[string]int{"pending": 0, "processing": 0, "completed": 0, "failed": 1, "buried": 1}}, byQueue["mail"])
	require.Equal(t, QueueStats{Queue: "idle", Paused: true, Counts: map[string]int{"pending": 0, "processing": 0, "completed": 0, "failed": 0, "buried": 0}}, byQueue["idle"])
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.dispatch(InsertJob{Handler: "a"})
	b := e.dispatch(InsertJob{Handler: "b", Queue: "mail"})
	c := e.dispatch(InsertJob{Handler: "a", Queue: "mail"})
	d := e.dispatch(InsertJob{Handler: "b"})
	e.exec("UPDATE {jobs} SET status = 'buried' WHERE id IN (?, ?)", b, d)
	for _, tc := range []struct {
		f    ListFilter
		want []int64
	}{
		{ListFilter{}, []int64{d, c, b, a}},
		{ListFilter{Queue: "mail"}, []int64{c, b}},
		{ListFilter{Status: StatusBuried}, []int64{d, b}},
		{ListFilter{Handler: "a"}, []int64{c, a}},
		{ListFilter{Queue: "mail", Status: StatusBuried, Handler: "b"}, []int64{b}},
		{ListFilter{Queue: "default", Status: StatusPending}, []int64{a}},
		{ListFilter{Queue: "nope"}, nil},
		{ListFilter{Limit: 2}, []int64{d, c}},
	} {
		t.Run(fmt.Sprintf("%+v", tc.f), func(t *testing.T) {
			rows, err := e.s.ListJobs(e.ctx, tc.f)
			require.NoError(t, err)
			if tc.want == nil {
				require.Empty(t, rows)
				return
			}
			require.Equal(t, tc.want, idsOf(rows))
		})
	}
	rows, err := e.s.ListJobs(e.ctx, ListFilter{Status: StatusBuried})
	require.NoError(t, err)
	require.Equal(t, "b", rows[0].Handler, "full rows")
	require.Equal(t, StatusBuried, rows[0].Status)

	// The default limit is 50.
	jobs := make([]InsertJob, 60)
	for i := range jobs {
		jobs[i] = InsertJob{Queue: "bulk", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3}
	}
	_, err = e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	rows, err = e.s.ListJobs(e.ctx, ListFilter{Queue: "bulk"})
	require.NoError(t, err)
	require.Len(t, rows, 50)
	require.Greater(t, rows[0].ID, rows[49].ID)
}

func TestGetJobAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.s.GetJob(e.ctx, 424242)
	require.ErrorIs(t, err, ErrJobNotFound)
	require.ErrorContains(t, err, "#424242")

	id := e.dispatch(InsertJob{Handler: "h"})
	other := e.dispatch(InsertJob{})
	l := logRow(id, EventFailed, 1)
	l.ErrorMessage, l.ErrorTrace, l.Context = String("boom"), String("#0 {main}"), String(`{"message":"x"}`)
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(id, EventStarted, 1), logRow(other, EventStarted, 1), l}))
	logs := e.logs(id)
	require.Equal(t, []string{"started#1", "failed#1"}, events(logs))
	require.Less(t, logs[0].ID, logs[1].ID)
	require.Equal(t, String("boom"), logs[1].ErrorMessage)
	require.Equal(t, String("#0 {main}"), logs[1].ErrorTrace)
	require.JSONEq(t, `{"message":"x"}`, logs[1].Context.String)
	none, err := e.s.JobLogs(e.ctx, 424242)
	require.NoError(t, err)
	require.Empty(t, none)

	n, err := e.s.CountLogEvents(e.ctx, EventStarted)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

func TestRetryJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clk.Set(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, st := range Statuses {
		t.Run(st, func(t *testing.T) {
			id := e.dispatch(InsertJob{Delay: time.Hour})
			e.exec(`UPDATE {jobs} SET status = ?, attempts = 2, reserved_at = NOW(), reserved_by = 'w',
				error_message = 'boom', failed_at = NOW(), completed_at = NOW() WHERE id = ?`, st, id)
			require.NoError(t, e.s.RetryJob(e.ctx, id))
			j := e.job(id)
			require.Equal(t, StatusPending, j.Status)
			require.Equal(t, 2, j.Attempts, "attempts kept")
			require.False(t, j.ErrorMessage.Valid)
			require.False(t, j.ReservedAt.Valid)
			require.False(t, j.ReservedBy.Valid)
			require.Equal(t, "2030-01-02 03:04:05", DateTime(j.AvailableAt), "now, by the app clock")
			// Queue::retry leaves these alone.
			require.True(t, j.FailedAt.Valid)
			require.True(t, j.CompletedAt.Valid)
		})
	}
	t.Run("twice", func(t *testing.T) {
		id := e.dispatch(InsertJob{})
		require.NoError(t, e.s.RetryJob(e.ctx, id))
		require.NoError(t, e.s.RetryJob(e.ctx, id), "no change is not 'not found'")
	})
	t.Run("missing", func(t *testing.T) {
		require.ErrorIs(t, e.s.RetryJob(e.ctx, 424242), ErrJobNotFound)
	})
}

func TestRetryBuried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bury := func(queue string) int64 {
		id := e.dispatch(InsertJob{Queue: queue})
		e.exec("UPDATE {jobs} SET status = 'buried', attempts = 3, error_message = 'x', available_at = '2001-01-01 00:00:00' WHERE id = ?", id)
		return id
	}
	a1, a2, b1 := bury("a"), bury("a"), bury("b")
	pending := e.dispatch(InsertJob{Queue: "a"})
	completed := e.dispatch(InsertJob{Queue: "a"})
	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", completed)

	n, err := e.s.RetryBuried(e.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []int64{a1, a2} {
		j := e.job(id)
		require.Equal(t, StatusPending, j.Status)
		require.Equal(t, 3, j.Attempts)
		require.False(t, j.ErrorMessage.Valid)
		require.Equal(t, e.clk.Now(), j.AvailableAt)
	}
	require.Equal(t, StatusBuried, e.job(b1).Status)
	require.Equal(t, StatusPending, e.job(pending).Status)
	require.Equal(t, StatusCompleted, e.job(completed).Status)

	n, err = e.s.RetryBuried(e.ctx, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, StatusPending, e.job(b1).Status)

	n, err = e.s.RetryBuried(e.ctx, "")
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestRetryBuriedMany(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jobs := make([]InsertJob, 2100) // more than one IN list of 1000
	for i := range jobs {
		jobs[i] = InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3}
	}
	_, err := e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	e.exec("UPDATE {jobs} SET status = 'buried'")
	n, err := e.s.RetryBuried(e.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, 2100, n)
	require.Equal(t, 2100, e.count("SELECT COUNT(*) FROM {jobs} WHERE status = 'pending'"))
}

func TestBuryJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.hold(e.dispatch(InsertJob{}), "w", 1).ID
	require.NoError(t, e.s.BuryJob(e.ctx, id, "by hand"))
	j := e.job(id)
	require.Equal(t, StatusBuried, j.Status)
	require.Equal(t, String("by hand"), j.ErrorMessage)
	requireRecent(t, j.FailedAt, "failed_at")
	require.False(t, j.ReservedBy.Valid, "the worker no longer holds it")
	require.Equal(t, 1, j.Attempts)
	// Idempotent, overwrites the message.
	require.NoError(t, e.s.BuryJob(e.ctx, id, "again"))
	require.Equal(t, String("again"), e.job(id).ErrorMessage)
	require.NoError(t, e.s.BuryJob(e.ctx, id, "again"))
	require.ErrorIs(t, e.s.BuryJob(e.ctx, 424242, "x"), ErrJobNotFound)

	// A worker holding it can no longer complete it.
	res, err := e.s.CompleteJobs(e.ctx, []Completion{completion(Attempt{ID: id, Attempt: 1, WorkerID: "w"})})
	require.NoError(t, err)
	require.Equal(t, []int64{id}, res.Refused)
}

func TestDeleteJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatch(InsertJob{})
	keep := e.dispatch(InsertJob{})
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(id, EventStarted, 1), logRow(id, EventCompleted, 1)}))
	require.NoError(t, e.s.DeleteJob(e.ctx, id))
	_, err := e.s.GetJob(e.ctx, id)
	require.ErrorIs(t, err, ErrJobNotFound)
	require.Len(t, e.logs(id), 2, "log rows stay")
	require.Equal(t, keep, e.job(keep).ID)
	err = e.s.DeleteJob(e.ctx, id)
	require.ErrorIs(t, err, ErrJobNotFound)
	require.ErrorContains(t, err, fmt.Sprintf("#%d", id))
}

func TestPurgeCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clk.Set(time.Date(2030, 6, 15, 12, 0, 0, 0, time.UTC))
	cutoff := e.clk.Now().Add(-7 * 24 * time.Hour) // QUEUETY_RETENTION_DAYS
	mk := func(status, completedAt string) int64 {
		id := e.dispatch(InsertJob{})
		e.exec("UPDATE {jobs} SET status = ?, completed_at = NULLIF(?, '') WHERE id = ?", status, completedAt, id)
		return id
	}
	old1 := mk("completed", "2030-06-01 00:00:00")
	old2 := mk("completed", "2030-06-08 11:59:59")
	edge := mk("completed", "2030-06-08 12:00:00") // not before the cutoff
	recent := mk("completed", "2030-06-14 00:00:00")
	noTime := mk("completed", "")
	buried := mk("buried", "2030-06-01 00:00:00")
	pending := mk("pending", "")
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(old1, EventCompleted, 1)}))

	n, err := e.s.PurgeCompleted(e.ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []int64{old1, old2} {
		_, err := e.s.GetJob(e.ctx, id)
		require.ErrorIs(t, err, ErrJobNotFound)
	}
	for _, id := range []int64{edge, recent, noTime, buried, pending} {
		e.job(id)
	}
	require.Len(t, e.logs(old1), 1, "logs are not purged with jobs")

	n, err = e.s.PurgeCompleted(e.ctx, cutoff)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestPurgeCompletedMany(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jobs := make([]InsertJob, 5300) // more than one slice of 5000
	for i := range jobs {
		jobs[i] = InsertJob{Queue: "default", Handler: "noop", Payload: []byte(`[]`), MaxAttempts: 3}
	}
	_, err := e.s.InsertJobs(e.ctx, jobs)
	require.NoError(t, err)
	e.exec("UPDATE {jobs} SET status = 'completed', completed_at = '2001-01-01 00:00:00'")
	n, err := e.s.PurgeCompleted(e.ctx, e.clk.Now())
	require.NoError(t, err)
	require.Equal(t, 5300, n)
	require.Zero(t, e.count("SELECT COUNT(*) FROM {jobs}"))
}

func TestTruncateJobsAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatch(InsertJob{})
	require.NoError(t, e.s.InsertLogs(e.ctx, []LogRow{logRow(id, EventStarted, 1)}))
	require.NoError(t, e.s.InsertLogs(e.ctx, nil))
	require.NoError(t, e.s.TruncateJobsAndLogs(e.ctx))
	require.Zero(t, e.count("SELECT COUNT(*) FROM {jobs}"))
	require.Zero(t, e.count("SELECT COUNT(*) FROM {logs}"))
	require.Equal(t, int64(1), e.dispatch(InsertJob{}), "auto-increment reset")
}
