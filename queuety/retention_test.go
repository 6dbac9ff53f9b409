package queuety

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/maintenance"
)

// retentionFixture writes rows older and newer than a 7-day retention (and
// a 30-day log and buried retention) and returns the ids each table must
// keep after a sweep.
type retentionFixture struct {
	keepJobs, keepWorkflows, keepLogs, keepEvents []int64
	allJobs, allWorkflows, allEvents              []int64
}

func execID(t *testing.T, c *Client, q string, args ...any) int64 {
	t.Helper()
	res, err := c.store.DB().Exec(q, args...)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	return id
}

func writeRetentionFixture(t *testing.T, c *Client) retentionFixture {
	t.Helper()
	tb := c.store.Tables()
	jobs, wfs, logs, events := "`"+tb["jobs"]+"`", "`"+tb["workflows"]+"`", "`"+tb["logs"]+"`", "`"+tb["workflow_events"]+"`"
	var f retentionFixture
	job := func(keep bool, status, at string, extra string, args ...any) int64 {
		cols, vals := "", ""
		if extra != "" {
			cols, vals = ", "+extra, ", ?"
		}
		q := fmt.Sprintf("INSERT INTO %s (handler, payload, status, completed_at, failed_at, created_at%s) VALUES ('retention_kept', '[]', ?, IF(? = 'completed', %s, NULL), IF(? = 'buried', %s, NULL), %s%s)",
			jobs, cols, at, at, at, vals)
		id := execID(t, c, q, append([]any{status, status, status}, args...)...)
		f.allJobs = append(f.allJobs, id)
		if keep {
			f.keepJobs = append(f.keepJobs, id)
		}
		return id
	}
	wf := func(keep bool, status, at string, parent any) int64 {
		q := fmt.Sprintf("INSERT INTO %s (name, status, state, total_steps, parent_workflow_id, started_at, completed_at, failed_at) VALUES ('wf', ?, '{}', 1, ?, %s, IF(? IN ('completed','cancelled'), %s, NULL), IF(? = 'failed', %s, NULL))", wfs, at, at, at)
		id := execID(t, c, q, status, parent, status, status)
		f.allWorkflows = append(f.allWorkflows, id)
		if keep {
			f.keepWorkflows = append(f.keepWorkflows, id)
		}
		return id
	}
	logRow := func(keep bool, jobID, wfID any, at string) {
		id := execID(t, c, fmt.Sprintf("INSERT INTO %s (job_id, workflow_id, handler, event, created_at) VALUES (?, ?, 'h', 'completed', %s)", logs, at), jobID, wfID)
		if keep {
			f.keepLogs = append(f.keepLogs, id)
		}
	}
	event := func(keep bool, wfID int64, at string) {
		id := execID(t, c, fmt.Sprintf("INSERT INTO %s (workflow_id, step_index, handler, event, created_at) VALUES (?, 0, 'h', 'step_completed', %s)", events, at), wfID)
		f.allEvents = append(f.allEvents, id)
		if keep {
			f.keepEvents = append(f.keepEvents, id)
		}
	}
	const old, veryOld, recent = "NOW() - INTERVAL 10 DAY", "NOW() - INTERVAL 40 DAY", "NOW() - INTERVAL 1 DAY"

	oldDone := job(false, "completed", old, "")
	job(true, "completed", recent, "")
	dep := job(true, "completed", veryOld, "")                  // a pending job depends on it
	pending := job(true, "pending", "NOW()", "depends_on", dep) // handler no worker serves
	job(false, "buried", veryOld, "")                           // past the 30-day buried retention
	job(true, "buried", old, "")                                // within it
	logRow(false, oldDone, nil, veryOld)                        // a finished job's old row
	logRow(true, pending, nil, veryOld)                         // a pending job's row stays
	logRow(true, oldDone, nil, recent)                          // recent

	done := wf(false, "completed", old, nil) // with its step job and events
	job(false, "completed", old, "workflow_id", done)
	event(false, done, old)
	failed := wf(false, "failed", old, nil)
	event(false, failed, veryOld)
	wf(false, "cancelled", old, nil)
	running := wf(true, "running", veryOld, nil) // live: its jobs, events, logs stay
	job(true, "completed", veryOld, "workflow_id", running)
	event(true, running, veryOld)
	logRow(true, nil, running, veryOld)
	wf(true, "completed", old, running) // a live parent's child
	fresh := wf(true, "completed", recent, nil)
	event(false, fresh, veryOld) // finished workflow, event past the log retention
	event(true, fresh, recent)
	return f
}

func ids(t *testing.T, c *Client, table string) []int64 {
	t.Helper()
	var out []int64
	require.NoError(t, c.store.DB().Select(&out, "SELECT id FROM `"+c.store.Tables()[table]+"` ORDER BY id"))
	return out
}

func retentionConfig(cfg *Config) {
	cfg.RetentionDays, cfg.LogRetentionDays, cfg.BuriedRetentionDays = 7, 30, 30
}

// TestRetentionSweepWhileWorking: the retention service inside a running
// worker, turned on, deletes exactly the rows the plugin's purges would
// take past their retention (completed jobs, log rows) and the buried jobs
// asked for, keeps every row a live row needs, never touches workflows,
// their events or dispatch keys (the plugin keeps them for ever), and
// leaves the jobs the worker completes meanwhile alone.
func TestRetentionSweepWhileWorking(t *testing.T) {
	c := newTestClient(t, func(cfg *Config) {
		retentionConfig(cfg)
		cfg.RetentionSchedule = "@every 1s"
	})
	c.retentionBatch = 2 // several slices per kind
	ctx := context.Background()
	f := writeRetentionFixture(t, c)

	reg := NewRegistry()
	reg.HandleFunc("noop", func(context.Context, *Job) error { return nil })
	var work []int64
	for range 50 {
		d, err := c.Dispatch(ctx, "noop", map[string]any{})
		require.NoError(t, err)
		work = append(work, d.ID)
	}
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	ret := workerService[*maintenance.Retention](t, w)
	ret.TestSignals.Swept.Init()
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	for range 50 {
		d, err := c.Dispatch(ctx, "noop", map[string]any{})
		require.NoError(t, err)
		work = append(work, d.ID)
		time.Sleep(5 * time.Millisecond)
	}
	wantJobs := append(append([]int64{}, f.keepJobs...), work...)
	sort.Slice(wantJobs, func(i, j int) bool { return wantJobs[i] < wantJobs[j] })
	waitFor(t, 10*time.Second, "the sweep", func() bool {
		return countStatus(t, c, "completed") == 3+len(work) && countStatus(t, c, "buried") == 1
	})
	// Another whole sweep after the one that got there: still nothing more.
	ret.TestSignals.Swept.Drain()
	for range 2 {
		result, ok := ret.TestSignals.Swept.Wait(10 * time.Second)
		require.True(t, ok, "no sweep")
		require.Equal(t, "ok", result)
	}
	require.Equal(t, wantJobs, ids(t, c, "jobs"))
	require.Equal(t, f.allWorkflows, ids(t, c, "workflows"), "workflows are not the sweep's")
	require.Equal(t, f.allEvents, ids(t, c, "workflow_events"))
	var logs []int64
	require.NoError(t, c.store.DB().Select(&logs, "SELECT id FROM `"+c.store.Tables()["logs"]+"` WHERE job_id IS NULL OR job_id NOT IN (?"+repeat(",?", len(work)-1)+") ORDER BY id", toAny(work)...))
	require.Equal(t, f.keepLogs, logs)
	require.Equal(t, 1, countStatus(t, c, "pending"), "only the job no worker serves is pending")
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func toAny(v []int64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

// TestRetentionLockSkipsSecondDaemon: while one process holds the retention
// lock, another's sweep is skipped and deletes nothing; once released it
// runs.
func TestRetentionLockSkipsSecondDaemon(t *testing.T) {
	c := newTestClient(t, retentionConfig)
	ctx := context.Background()
	f := writeRetentionFixture(t, c)
	other, err := Open(ctx, c.cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })

	release, ok, err := c.store.RetentionLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok2, err := other.store.RetentionLock(ctx)
	require.NoError(t, err)
	require.False(t, ok2, "the lock is one holder's")
	res, err := other.Sweep(ctx, RetentionPolicyOf(c.cfg))
	require.True(t, errors.Is(err, ErrRetentionLocked), "%v", err)
	require.Empty(t, res)
	require.Equal(t, f.allJobs, ids(t, c, "jobs"), "nothing deleted while the other holds the lock")
	require.Equal(t, f.allWorkflows, ids(t, c, "workflows"))

	// The service of a second daemon logs the skip and carries on.
	var logged bytes.Buffer
	r := newRetention(other, RetentionPolicyOf(c.cfg),
		slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r.TestSignals.Swept.Init()
	require.NoError(t, r.Start(context.Background()))
	require.Equal(t, "skipped", r.RunOnce(ctx))
	result, ok := r.TestSignals.Swept.Wait(10 * time.Second) // the sweep at start
	require.True(t, ok)
	require.Equal(t, "skipped", result)
	r.Stop()
	require.Contains(t, logged.String(), "retention sweep skipped: another process holds the lock")
	require.Equal(t, f.allJobs, ids(t, c, "jobs"))

	release()
	res, err = other.Sweep(ctx, RetentionPolicy{RetainCompleted: 7 * 24 * time.Hour, RetainBuried: 30 * 24 * time.Hour,
		RetainWorkflows: 7 * 24 * time.Hour, RetainLogs: 30 * 24 * time.Hour, RetainEvents: 30 * 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 3, res[RetainWorkflows])
	require.Equal(t, f.keepJobs, ids(t, c, "jobs"))
	require.Equal(t, f.keepEvents, ids(t, c, "workflow_events"))
}

// TestRetentionCountMatchesPurge: each kind's count is what its purge then
// deletes, and a second purge finds nothing.
func TestRetentionCountMatchesPurge(t *testing.T) {
	c := newTestClient(t, nil)
	ctx := context.Background()
	writeRetentionFixture(t, c)
	want := map[RetentionKind]int{RetainWorkflows: 3, RetainCompleted: 1, RetainBuried: 1, RetainEvents: 1, RetainLogs: 1}
	for _, k := range RetentionKinds {
		age := 7 * 24 * time.Hour
		if k != RetainWorkflows && k != RetainCompleted {
			age = 30 * 24 * time.Hour
		}
		n, err := c.CountRetention(ctx, k, age)
		require.NoError(t, err)
		require.Equal(t, want[k], n, "count %s", k)
		got, err := c.Purge(ctx, k, age)
		require.NoError(t, err)
		require.Equal(t, n, got, "purge %s", k)
		n, err = c.CountRetention(ctx, k, age)
		require.NoError(t, err)
		require.Zero(t, n, "%s left after purge", k)
	}
}

// TestRetentionSweepsAtStart: the service sweeps once when the worker
// starts, not only when its schedule first fires (here in an hour).
func TestRetentionSweepsAtStart(t *testing.T) {
	c := newTestClient(t, func(cfg *Config) {
		retentionConfig(cfg)
		cfg.RetentionSchedule = "@every 1h"
	})
	f := writeRetentionFixture(t, c)
	reg := NewRegistry()
	reg.HandleFunc("noop", func(context.Context, *Job) error { return nil })
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "the start-up sweep", func() bool {
		return len(ids(t, c, "jobs")) == len(f.keepJobs)
	})
	require.Equal(t, f.keepJobs, ids(t, c, "jobs"))
	require.Equal(t, f.allWorkflows, ids(t, c, "workflows"))
	require.Equal(t, f.allEvents, ids(t, c, "workflow_events"))
}
