package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The oldest-pending age counts only rows that can run: a step of a failed
// workflow and a job whose dependency is not completed are older, but the
// age is the runnable job's; those two are counted as waiting instead.
func TestMetricsOldestRunnableAndWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("INSERT INTO {workflows} (id, name, status, state, total_steps) VALUES (7, 'wf', 'failed', '{}', 2)")
	stranded := e.dispatch(InsertJob{Queue: "q"})
	e.exec("UPDATE {jobs} SET workflow_id = 7, step_index = 1, available_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", stranded)
	parent := e.dispatch(InsertJob{Queue: "other"})
	e.exec("UPDATE {jobs} SET available_at = NOW() + INTERVAL 1 HOUR WHERE id = ?", parent)
	child := e.dispatch(InsertJob{Queue: "q"})
	e.exec("UPDATE {jobs} SET depends_on = ?, available_at = NOW() - INTERVAL 30 MINUTE WHERE id = ?", parent, child)
	runnable := e.dispatch(InsertJob{Queue: "q"})
	e.exec("UPDATE {jobs} SET available_at = NOW() - INTERVAL 100 SECOND WHERE id = ?", runnable)
	e.dispatch(InsertJob{Queue: "blocked"})
	e.exec("UPDATE {jobs} SET depends_on = ?, available_at = NOW() - INTERVAL 1 HOUR WHERE queue = 'blocked'", parent)

	m, err := e.s.MetricsSnapshot(e.ctx)
	require.NoError(t, err)
	require.InDelta(t, 100, m.OldestPending["q"], 5, "the runnable job's age, not the stranded step's")
	_, ok := m.OldestPending["blocked"]
	require.False(t, ok, "a queue whose only pending job waits has no runnable age")
	_, ok = m.OldestPending["other"]
	require.False(t, ok, "a job not due yet is not waiting")
	require.ElementsMatch(t, []MetricsWaitingCount{
		{Queue: "q", Reason: "workflow", N: 1},
		{Queue: "q", Reason: "dependency", N: 1},
		{Queue: "blocked", Reason: "dependency", N: 1},
	}, m.Waiting)

	e.exec("UPDATE {jobs} SET status = 'completed' WHERE id = ?", parent)
	m, err = e.s.MetricsSnapshot(e.ctx)
	require.NoError(t, err)
	require.InDelta(t, 1800, m.OldestPending["q"], 5, "the dependency is met: the child runs and is oldest")
	require.InDelta(t, 3600, m.OldestPending["blocked"], 5)
	require.Equal(t, []MetricsWaitingCount{{Queue: "q", Reason: "workflow", N: 1}}, m.Waiting)
}

// Completed log rows are counted in id ranges by queue; other events and
// rows outside the range are not.
func TestLogCompletions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	head, err := e.s.LogHead(e.ctx)
	require.NoError(t, err)
	require.Zero(t, head)
	for _, r := range []struct{ queue, event string }{
		{"a", "started"}, {"a", "completed"}, {"b", "completed"}, {"a", "completed"}, {"a", "buried"}, {"b", "completed"},
	} {
		e.exec("INSERT INTO {logs} (job_id, handler, queue, event, attempt) VALUES (1, 'h', ?, ?, 1)", r.queue, r.event)
	}
	head, err = e.s.LogHead(e.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, head)
	got, err := e.s.LogCompletions(e.ctx, 0, 4)
	require.NoError(t, err)
	require.ElementsMatch(t, []QueueCount{{Queue: "a", N: 2}, {Queue: "b", N: 1}}, got)
	got, err = e.s.LogCompletions(e.ctx, 4, head)
	require.NoError(t, err)
	require.Equal(t, []QueueCount{{Queue: "b", N: 1}}, got)
	got, err = e.s.LogCompletions(e.ctx, head, head)
	require.NoError(t, err)
	require.Empty(t, got)
}

// Live registrations by runtime with their queues; a stale or stopped one
// is not live.
func TestMetricsFleet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clk.Now()
	for _, w := range []struct {
		id, runtime, status string
		ago                 int
	}{{"g1", "go", "active", 0}, {"p1", "python", "active", 0}, {"old", "go", "active", 600}, {"gone", "go", "stopped", 0}} {
		e.exec(`INSERT INTO {workers} (worker_id, task_queue, queues, runtime, capabilities, status, last_heartbeat_at, registered_at, updated_at)
			VALUES (?, 'default', '["default","mail"]', ?, '[]', ?, ? - INTERVAL ? SECOND, ?, ?)`,
			w.id, w.runtime, w.status, DateTime(now), w.ago, DateTime(now), DateTime(now))
	}
	f, err := e.s.MetricsFleet(e.ctx, now.Add(-60e9), now.Add(-900e9))
	require.NoError(t, err)
	require.ElementsMatch(t, []MetricsWorker{
		{Runtime: "go", Queues: StringList{"default", "mail"}},
		{Runtime: "external", Queues: StringList{"default", "mail"}},
	}, f.Workers)
	require.Empty(t, f.PHPSeen)
}
