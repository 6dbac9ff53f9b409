package store

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// logAt inserts a log row created at t.
func (e *testEnv) logAt(t time.Time, jobID, workflowID any, handler, event string, duration any) int64 {
	e.t.Helper()
	res := e.exec("INSERT INTO {logs} (job_id, workflow_id, handler, queue, event, duration_ms, created_at) VALUES (?, ?, ?, 'default', ?, ?, ?)",
		jobID, workflowID, handler, event, duration, DateTime(t))
	id, err := res.LastInsertId()
	require.NoError(e.t, err)
	return id
}

func logIDs(rows []LogRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// TestQueryLogs: the first filter set picks the query and its order as
// Queuety::query_logs does; the others narrow it; no filter reads the
// last 24 hours.
func TestQueryLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.s.Now()
	old := e.logAt(now.Add(-48*time.Hour), 1, nil, "a", "started", nil)
	l1 := e.logAt(now.Add(-time.Hour), 1, nil, "a", "completed", 5)
	l2 := e.logAt(now.Add(-time.Minute), 2, 7, "b", "failed", 9)
	l3 := e.logAt(now, 2, 7, "b", "retried", nil)
	l4 := e.logAt(now, nil, 7, "", "workflow_failed", nil)

	q := func(f LogFilter) []int64 {
		rows, err := e.s.QueryLogs(e.ctx, f)
		require.NoError(t, err)
		return logIDs(rows)
	}
	require.Equal(t, []int64{old, l1}, q(LogFilter{JobID: sql.NullInt64{Int64: 1, Valid: true}}))
	require.Equal(t, []int64{l2, l3, l4}, q(LogFilter{WorkflowID: sql.NullInt64{Int64: 7, Valid: true}}))
	require.Equal(t, []int64{l3, l2}, q(LogFilter{Handler: sql.NullString{String: "b", Valid: true}}))
	require.Equal(t, []int64{l3}, q(LogFilter{Handler: sql.NullString{String: "b", Valid: true}, Limit: 1}))
	require.Equal(t, []int64{l2}, q(LogFilter{Event: sql.NullString{String: "failed", Valid: true}}))
	require.Equal(t, []int64{l2, l3, l4}, q(LogFilter{Since: sql.NullTime{Time: now.Add(-30 * time.Minute), Valid: true}}))
	require.Equal(t, []int64{l1, l2, l3, l4}, q(LogFilter{}))
	// Combined: the job's rows of one event; the workflow's since a time.
	require.Equal(t, []int64{l3}, q(LogFilter{JobID: sql.NullInt64{Int64: 2, Valid: true}, Event: sql.NullString{String: "retried", Valid: true}}))
	require.Equal(t, []int64{l3, l4}, q(LogFilter{WorkflowID: sql.NullInt64{Int64: 7, Valid: true}, Since: sql.NullTime{Time: now, Valid: true}}))
	require.Equal(t, []int64{}, q(LogFilter{Handler: sql.NullString{String: "a", Valid: true}, WorkflowID: sql.NullInt64{Int64: 7, Valid: true}}))
}

// TestHandlerStats computes Metrics::handler_stats: counts, failed +
// buried, mean and p95 of completions, the error rate; ” and old rows out.
func TestHandlerStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.s.Now()
	for i := 1; i <= 20; i++ {
		e.logAt(now, i, nil, "a", "completed", i*10) // 10..200
	}
	e.logAt(now, 30, nil, "a", "completed", nil) // untimed: counted, not in p95
	e.logAt(now, 31, nil, "a", "failed", 3)
	e.logAt(now, 32, nil, "a", "buried", 3)
	e.logAt(now, 33, nil, "a", "retried", nil)
	e.logAt(now.Add(-2*time.Hour), 34, nil, "a", "failed", 3) // outside the window
	e.logAt(now, 40, nil, "b", "buried", 1)
	e.logAt(now, nil, 9, "", "workflow_failed", nil)
	e.logAt(now, 41, nil, "c", "completed", 7)
	e.logAt(now, 42, nil, "c", "completed", 8)

	got, err := e.s.HandlerStats(e.ctx, now.Add(-time.Hour))
	require.NoError(t, err)
	by := map[string]HandlerStats{}
	for _, h := range got {
		by[h.Handler] = h
	}
	require.Len(t, by, 3)
	// a: 21 completed (mean of 10..200 = 105), 2 failed; p95 of the 20
	// timed: rank ceil(19) - 1 = 18 → 190; 2/23 = 0.08695... → 0.087.
	require.Equal(t, HandlerStats{Handler: "a", Completed: 21, Failed: 2, AvgMS: 105, P95MS: 190, ErrorRate: 0.087}, by["a"])
	require.Equal(t, HandlerStats{Handler: "b", Completed: 0, Failed: 1, AvgMS: 0, P95MS: 0, ErrorRate: 1}, by["b"])
	require.Equal(t, HandlerStats{Handler: "c", Completed: 2, Failed: 0, AvgMS: 7.5, P95MS: 8, ErrorRate: 0}, by["c"])
}
