package queuety

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// liveShapes writes the thirteen shapes of rows, all ten days old, that a
// retention of one day must leave alone because a live row still needs
// them, and records which rows must survive.
type liveShapes struct {
	t    *testing.T
	c    *Client
	keep map[string][]int64 // table → ids that must survive
	// dependents must complete once a worker runs (after the buried ones
	// are retried); retry lists the buried jobs an operator retries.
	dependents, retry []int64
}

const liveOld = "NOW() - INTERVAL 10 DAY"

func (s *liveShapes) table(name string) string { return "`" + s.c.store.Tables()[name] + "`" }

func (s *liveShapes) kept(table string, id int64) int64 {
	s.keep[table] = append(s.keep[table], id)
	return id
}

// job writes a job row; a completed or buried one finished ten days ago.
func (s *liveShapes) job(status, handler string, dependsOn, workflowID, batchID any) int64 {
	return execID(s.t, s.c, fmt.Sprintf(`INSERT INTO %s (handler, payload, status, attempts, completed_at, failed_at, reserved_at, created_at, depends_on, workflow_id, step_index, batch_id)
		VALUES (?, '[]', ?, IF(? = 'buried', 3, 0), IF(? = 'completed', %[2]s, NULL), IF(? = 'buried', %[2]s, NULL), IF(? = 'processing', NOW(), NULL), %[2]s, ?, ?, IF(? IS NULL, NULL, 0), ?)`,
		s.table("jobs"), liveOld), handler, status, status, status, status, status, dependsOn, workflowID, workflowID, batchID)
}

// buriedNow writes a job buried just now (within its retention, so an
// operator may still retry it) that depends on dependsOn.
func (s *liveShapes) buriedNow(dependsOn int64) int64 {
	id := s.job("buried", "live_dep", dependsOn, nil, nil)
	_, err := s.c.store.DB().Exec("UPDATE "+s.table("jobs")+" SET failed_at = NOW() WHERE id = ?", id)
	require.NoError(s.t, err)
	return id
}

func (s *liveShapes) workflow(status string, parent any) int64 {
	return execID(s.t, s.c, fmt.Sprintf(`INSERT INTO %s (name, status, state, total_steps, parent_workflow_id, started_at, completed_at, failed_at)
		VALUES ('live', ?, '{}', 1, ?, %[2]s, IF(? IN ('completed', 'cancelled'), %[2]s, NULL), IF(? = 'failed', %[2]s, NULL))`,
		s.table("workflows"), liveOld), status, parent, status, status)
}

func (s *liveShapes) log(jobID, workflowID any) int64 {
	return execID(s.t, s.c, fmt.Sprintf("INSERT INTO %s (job_id, workflow_id, handler, event, created_at) VALUES (?, ?, 'h', 'completed', %s)",
		s.table("logs"), liveOld), jobID, workflowID)
}

func (s *liveShapes) event(workflowID int64) int64 {
	return execID(s.t, s.c, fmt.Sprintf("INSERT INTO %s (workflow_id, step_index, handler, event, created_at) VALUES (?, 0, 'h', 'step_completed', %s)",
		s.table("workflow_events"), liveOld), workflowID)
}

func (s *liveShapes) write() {
	// R1 a completed job a pending job depends on.
	r1 := s.kept("jobs", s.job("completed", "live_done", nil, nil, nil))
	s.dependents = append(s.dependents, s.kept("jobs", s.job("pending", "live_dep", r1, nil, nil)))

	// R2 (N5) the completed dependency of a buried job, which an operator
	// then retries.
	r2 := s.kept("jobs", s.job("completed", "live_done", nil, nil, nil))
	b2 := s.kept("jobs", s.buriedNow(r2))
	s.retry, s.dependents = append(s.retry, b2), append(s.dependents, b2)

	// R3 (N2) the step job of a completed workflow that a pending plain job
	// depends on, and one that a buried plain job depends on: the workflow
	// and its step job stay.
	for _, status := range []string{"pending", "buried"} {
		wf := s.kept("workflows", s.workflow("completed", nil))
		step := s.kept("jobs", s.job("completed", "live_step", nil, wf, nil))
		if status == "pending" {
			s.dependents = append(s.dependents, s.kept("jobs", s.job(status, "live_dep", step, nil, nil)))
			continue
		}
		dep := s.kept("jobs", s.buriedNow(step))
		s.retry, s.dependents = append(s.retry, dep), append(s.dependents, dep)
	}

	// R4 a job of an open batch: its completed sibling may go (the batch
	// keeps its counters), the batch row and its pending job stay.
	batch := s.kept("batches", execID(s.t, s.c, fmt.Sprintf(
		"INSERT INTO %s (name, total_jobs, pending_jobs, failed_job_ids, options, created_at) VALUES ('live', 2, 1, '[]', '{}', %s)", s.table("batches"), liveOld)))
	s.job("completed", "live_done", nil, nil, batch)
	s.dependents = append(s.dependents, s.kept("jobs", s.job("pending", "live_dep", nil, nil, batch)))

	// R5 a chain: a completed head, a completed middle link, a pending
	// tail. The middle link stays for the tail; the head, whose dependent
	// has run, may go.
	head := s.job("completed", "live_done", nil, nil, nil)
	mid := s.kept("jobs", s.job("completed", "live_done", head, nil, nil))
	s.dependents = append(s.dependents, s.kept("jobs", s.job("pending", "live_dep", mid, nil, nil)))

	// R6 a running workflow's completed step job, its log and event rows.
	running := s.kept("workflows", s.workflow("running", nil))
	runStep := s.kept("jobs", s.job("completed", "live_step", nil, running, nil))
	s.kept("logs", s.log(runStep, running))
	s.kept("workflow_events", s.event(running))

	// R7 a finished child of a running parent.
	s.kept("workflows", s.workflow("completed", running))

	// R8 a finished workflow another one waits for.
	waiter := s.kept("workflows", s.workflow("waiting_for_workflows", nil))
	awaited := s.kept("workflows", s.workflow("completed", nil))
	s.kept("workflow_dependencies", execID(s.t, s.c, fmt.Sprintf(
		"INSERT INTO %s (waiting_workflow_id, step_index, dependency_workflow_id, created_at) VALUES (?, 0, ?, %s)", s.table("workflow_dependencies"), liveOld), waiter, awaited))

	// R9 an old log row of a pending job.
	pending := s.kept("jobs", s.job("pending", "live_dep", nil, nil, nil))
	s.dependents = append(s.dependents, pending)
	s.kept("logs", s.log(pending, nil))

	// R10 the completed dependency of a processing job.
	dep10 := s.kept("jobs", s.job("completed", "live_done", nil, nil, nil))
	s.kept("jobs", s.job("processing", "live_busy", dep10, nil, nil))

	// R11 a buried job a pending job depends on (buried retention on).
	dep11 := s.kept("jobs", s.job("buried", "live_done", nil, nil, nil))
	s.kept("jobs", s.job("pending", "live_blocked", dep11, nil, nil))

	// R12 a buried-and-retriable step job of a failed workflow that a
	// pending job of another workflow depends on: both workflows stay.
	failedWF := s.kept("workflows", s.workflow("failed", nil))
	buriedStep := s.kept("jobs", s.job("buried", "live_step", nil, failedWF, nil))
	other := s.kept("workflows", s.workflow("running", nil))
	s.kept("jobs", s.job("pending", "live_blocked", buriedStep, other, nil))

	// R13 an old signal of a workflow waiting for signals.
	signalled := s.kept("workflows", s.workflow("waiting_for_signal", nil))
	s.kept("signals", execID(s.t, s.c, fmt.Sprintf(
		"INSERT INTO %s (workflow_id, signal_name, payload, received_at) VALUES (?, 'approval', '[]', %s)", s.table("signals"), liveOld), signalled))
}

// TestRetentionKeepsEveryLiveShape (N2, N5): a sweep with every kind's
// retention at one day deletes none of the rows the thirteen live shapes
// need, and afterwards the dependents run: pending ones at once, buried
// ones once an operator retries them.
func TestRetentionKeepsEveryLiveShape(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	s := &liveShapes{t: t, c: c, keep: map[string][]int64{}}
	s.write()

	day := 24 * time.Hour
	policy := RetentionPolicy{RetainWorkflows: day, RetainCompleted: day, RetainBuried: day, RetainEvents: day, RetainLogs: day}
	deleted, err := c.Sweep(ctx, policy)
	require.NoError(t, err)
	require.Equal(t, map[RetentionKind]int{RetainCompleted: 2}, deleted, "only the batch's completed job and the chain's head go")
	for table, want := range s.keep {
		var got []int64
		require.NoError(t, c.store.DB().Select(&got, "SELECT id FROM "+s.table(table)+" WHERE id IN (?"+repeat(",?", len(want)-1)+")", toAny(want)...))
		require.ElementsMatch(t, want, got, "rows of %s a live row needs", table)
	}
	// A second sweep finds nothing more.
	deleted, err = c.Sweep(ctx, policy)
	require.NoError(t, err)
	require.Empty(t, deleted)

	// Still works: every dependent runs once.
	var mu sync.Mutex
	runs := map[int64]int{}
	reg := NewRegistry()
	reg.HandleFunc("live_dep", func(_ context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.ID]++
		return nil
	})
	for _, id := range s.retry {
		require.NoError(t, c.RetryJob(ctx, id))
	}
	startWorker(t, c, reg)
	waitFor(t, 15*time.Second, "the dependents to complete", func() bool {
		for _, id := range s.dependents {
			if jobRow(t, c, id).Status != "completed" {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range s.dependents {
		require.Equal(t, 1, runs[id], "job %d ran once", id)
	}
}
