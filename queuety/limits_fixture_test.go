package queuety

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Replays of the plugin's rate-limit, concurrency-group, debug-row and
// step-metadata scenarios (testdata/queuety-plugin): the daemon takes the
// recorded worker's step and must leave the recorded rows. Steps the
// recording took in PHP (worker A finishing its job) are applied from the
// recording.

var logColumns = []string{"id", "job_id", "workflow_id", "step_index", "handler", "queue", "event", "attempt",
	"duration_ms", "memory_peak_kb", "error_message", "error_class", "error_trace", "context", "created_at"}

// restoreRecorded replaces the jobs and logs tables with a snapshot's rows.
func restoreRecorded(t *testing.T, c *Client, jobs, logs []map[string]any) {
	t.Helper()
	for _, table := range []string{"jobs", "logs"} {
		_, err := c.store.DB().Exec("DELETE FROM `" + c.store.Tables()[table] + "`")
		require.NoError(t, err)
	}
	insertRecorded(t, c, jobs)
	for _, r := range logs {
		args := make([]any, len(logColumns))
		for i, col := range logColumns {
			args[i] = r[col]
		}
		q := fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", c.store.Tables()["logs"],
			strings.Join(logColumns, ","), strings.TrimSuffix(strings.Repeat("?,", len(logColumns)), ","))
		_, err := c.store.DB().Exec(q, args...)
		require.NoError(t, err)
	}
}

// insertNewRecorded inserts the snapshot's jobs the table lacks.
func insertNewRecorded(t *testing.T, c *Client, jobs []map[string]any) {
	t.Helper()
	var fresh []map[string]any
	for _, j := range jobs {
		var n int
		require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE id = ?", j["id"]))
		if n == 0 {
			fresh = append(fresh, j)
		}
	}
	insertRecorded(t, c, fresh)
}

// limitsRegistry has the scenarios' handlers: noop, flaky, grouped (its
// group is in the rows) and limited (config() rate_limit [2, 3]).
func limitsRegistry() *Registry {
	reg := fixtureRegistry()
	reg.HandleFunc("grouped", func(context.Context, *Job) error { return nil })
	reg.HandleFunc("limited", func(context.Context, *Job) error { return nil }, WithRateLimit(2, 3*time.Second))
	return reg
}

// TestFixtureRateLimitedHandler: two runs per 3 s; the third job is claimed
// and handed back untouched (no log row), by a fresh worker too (the count
// comes from the completed log rows); once the window has passed it runs.
func TestFixtureRateLimitedHandler(t *testing.T) {
	t.Parallel()
	f := loadFixture(t, "rate_limited_handler.json")
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1; cfg.Queues = []string{"default", "critical"} })
	insertRecorded(t, c, f.Snapshots[0].Jobs)
	w, err := c.NewWorker(limitsRegistry())
	require.NoError(t, err)
	for _, snap := range f.Snapshots[1:] {
		switch {
		case strings.Contains(snap.After, "within the limit"):
			require.Equal(t, 1, stepOnce(t, w), snap.After)
		case strings.Contains(snap.After, "fresh worker"):
			w, err = c.NewWorker(limitsRegistry())
			require.NoError(t, err)
			require.Equal(t, 0, stepOnce(t, w), snap.After)
		case strings.Contains(snap.After, "rate limited") || strings.Contains(snap.After, "unclaimed job 3"):
			require.Equal(t, 0, stepOnce(t, w), snap.After)
		case strings.Contains(snap.After, "window over"):
			// sleep(4) in the recording: the window's rows age instead.
			_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["logs"] + "` SET created_at = created_at - INTERVAL 4 SECOND")
			require.NoError(t, err)
			require.Equal(t, 1, stepOnce(t, w), snap.After)
		default:
			t.Fatalf("unknown step %q", snap.After)
		}
		compareJobs(t, c, snap.After, snap.Jobs)
		compareLogs(t, c, snap.After, snap.Logs)
	}
}

// TestFixtureConcurrencyGroup: group provider (limit 1) is held by worker
// A. The daemon refuses jobs 2 and 3 exactly as the plugin does (rows
// untouched), but unlike the plugin's worker, which stops at the refused
// head job, it runs job 4 (no group) behind them in the same claim
// (docs/compat.md). Once A finishes, everything ends as in the recording.
func TestFixtureConcurrencyGroup(t *testing.T) {
	t.Parallel()
	f := loadFixture(t, "concurrency_group.json")
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1; cfg.Queues = []string{"default", "critical"} })
	insertRecorded(t, c, f.Snapshots[1].Jobs) // job 1 processing in worker A
	w, err := c.NewWorker(limitsRegistry())
	require.NoError(t, err)

	require.Equal(t, 1, stepOnce(t, w), "worker B: jobs 2 and 3 refused, job 4 runs")
	compareJobs(t, c, "refused", f.Snapshots[2].Jobs[:3])
	require.Equal(t, store.StatusCompleted, jobRow(t, c, 4).Status)
	require.Equal(t, []string{"started", "completed"}, logEvents(jobLogs(t, c, 4)))
	require.Empty(t, jobLogs(t, c, 2))
	require.Empty(t, jobLogs(t, c, 3))
	require.Equal(t, 0, stepOnce(t, w), "flush: the group is still full")
	compareJobs(t, c, "flush", f.Snapshots[3].Jobs[:3])

	// Worker A (PHP) finishes job 1: its rows as recorded, with job 4's.
	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["jobs"]+"` SET status = 'completed', completed_at = NOW() WHERE id = ?", 1)
	require.NoError(t, err)
	for stepOnce(t, w) > 0 {
	}
	final := f.Snapshots[len(f.Snapshots)-1]
	compareJobs(t, c, "drained", final.Jobs)
	for _, id := range []int64{2, 3, 4} {
		require.Equal(t, []string{"started", "completed"}, logEvents(jobLogs(t, c, id)), "job %d", id)
	}
}

// TestFixtureDebugLogs: QUEUETY_DEBUG rows around a completed job, a buried
// job and an empty poll of both queues.
func TestFixtureDebugLogs(t *testing.T) {
	t.Parallel()
	f := loadFixture(t, "debug_logs.json")
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Queues = []string{"default", "critical"}
		cfg.Debug = true
	})
	insertRecorded(t, c, f.Snapshots[0].Jobs)
	w, err := c.NewWorker(fixtureRegistry())
	require.NoError(t, err)
	for _, snap := range f.Snapshots[1:] {
		want := 1
		if strings.Contains(snap.After, "nothing to claim") {
			want = 0
		}
		require.Equal(t, want, stepOnce(t, w), snap.After)
		compareJobs(t, c, snap.After, snap.Jobs)
		compareLogs(t, c, snap.After, snap.Logs)
	}
}

// TestFixtureDebugDeferrals: the debug rows of a concurrency-group refusal
// and a rate-limit refusal. The worker serves only "default": a claim whose
// head job is refused goes on to the next queue (the plugin's worker
// stops), which would add that queue's "Attempting" rows.
func TestFixtureDebugDeferrals(t *testing.T) {
	t.Parallel()
	f := loadFixture(t, "debug_deferrals.json")
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Queues = []string{"default"}
		cfg.Debug = true
	})
	insertRecorded(t, c, f.Snapshots[0].Jobs)
	w, err := c.NewWorker(limitsRegistry())
	require.NoError(t, err)
	for _, snap := range f.Snapshots[1:] {
		switch {
		case strings.Contains(snap.After, "worker A"):
			restoreRecorded(t, c, snap.Jobs, snap.Logs)
		case strings.Contains(snap.After, "dispatch"):
			insertNewRecorded(t, c, snap.Jobs)
		case strings.Contains(snap.After, "refused") || strings.Contains(snap.After, "rate limited"):
			require.Equal(t, 0, stepOnce(t, w), snap.After)
		case strings.Contains(snap.After, "ran once"):
			require.Equal(t, 1, stepOnce(t, w), snap.After)
		default:
			t.Fatalf("unknown step %q", snap.After)
		}
		compareJobs(t, c, snap.After, snap.Jobs)
		compareLogs(t, c, snap.After, snap.Logs)
	}
}

// fakePHP stands in for the PHP pool: it runs the step classes of
// step_class_metadata and answers for their config() and attributes as
// the bridge's HandlerMetadata::from_class does.
type fakePHP struct {
	meta  map[string]workflow.HandlerMetadata
	calls map[string]int
}

func (f *fakePHP) Handle(context.Context, *Job) error { return nil }

func (f *fakePHP) HandleStep(_ context.Context, job *store.JobRow, state []byte) ([]byte, error) {
	f.calls[job.Handler]++
	switch job.Handler {
	case "IncStep":
		s, err := workflow.ParseState(state)
		if err != nil {
			return nil, err
		}
		n, _ := s.Get("n")
		return []byte(fmt.Sprintf(`{"n":%d}`, intValue(n)+1)), nil
	case "ConfiguredStep":
		if f.calls[job.Handler] == 1 {
			return nil, runtimeErr{"configured step: first attempt fails"}
		}
		return []byte(`{"configured":true}`), nil
	case "AttributeStep":
		if f.calls[job.Handler] == 1 {
			return nil, runtimeErr{"attribute step: first attempt fails"}
		}
		return []byte(`{"attributed":true}`), nil
	}
	return nil, fmt.Errorf("no step %s", job.Handler)
}

func (f *fakePHP) HandleItem(context.Context, *store.JobRow, []byte, []byte, int64) ([]byte, error) {
	return nil, fmt.Errorf("no items here")
}

func (f *fakePHP) HandlerMetadata(class string) workflow.HandlerMetadata { return f.meta[class] }

func (f *fakePHP) PeekClassMetadata(class string) (workflow.HandlerMetadata, bool) {
	return f.meta[class], true
}

// TestFixtureStepClassMetadata: the engine writes a PHP step class's
// config() and #[QueuetyStep] into the step jobs it enqueues, read through
// the pool: queue, max_attempts, group and cost in the columns,
// max_attempts, backoff and rate_limit in __queuety_runtime. The plugin
// empties a list backoff ([5, 30] is written [] and the retry runs at
// once); the daemon keeps it and the retry waits 5 s (docs/compat.md).
func TestFixtureStepClassMetadata(t *testing.T) {
	t.Parallel()
	var f wfFixture
	readFixtureInto(t, "step_class_metadata.json", &f)
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.Queues = []string{"default", "critical", "llm"}
		// One claim per snapshot, as the plugin's worker took them: a
		// chained step would already be running at the next snapshot.
		cfg.WorkflowChainSteps = -1
	})
	insertRecordedWorkflows(t, c, f.Snapshots[0].Workflows)
	insertRecorded(t, c, f.Snapshots[0].Jobs)
	insertRecordedLogs(t, c, f.Snapshots[0].Logs)
	php := &fakePHP{calls: map[string]int{}, meta: map[string]workflow.HandlerMetadata{
		"ConfiguredStep": {Queue: "llm", MaxAttempts: 5, Backoff: phpjson.List(phpjson.Int(5), phpjson.Int(30)),
			RateLimit: &workflow.RateLimit{Max: 10, Window: 60}, ConcurrencyGroup: "provider", ConcurrencyLimit: 2, CostUnits: 3},
		"AttributeStep": {MaxAttempts: 4, Backoff: phpjson.String("linear")},
	}}
	reg := NewRegistry()
	reg.SetFallback(php)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)

	fixed := func(jobs []map[string]any) []map[string]any {
		out := make([]map[string]any, len(jobs))
		for i, j := range jobs {
			cp := map[string]any{}
			for k, v := range j {
				cp[k] = v
			}
			if cp["handler"] == "ConfiguredStep" {
				cp["payload"] = strings.Replace(cp["payload"].(string), `"backoff":[]`, `"backoff":[5,30]`, 1)
			}
			out[i] = cp
		}
		return out
	}
	for i := 1; i < len(f.Snapshots); i++ {
		snap := f.Snapshots[i]
		if i == 3 {
			// The plugin retried at once; our retry waits the list's 5 s.
			until := time.Until(jobRow(t, c, 2).AvailableAt)
			require.InDelta(t, 5, until.Seconds(), 2, "ConfiguredStep's retry waits backoff[0]")
			_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW() WHERE id = 2")
			require.NoError(t, err)
		}
		if strings.Contains(snap.After, "available_at forced") {
			_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
			require.NoError(t, err)
		}
		require.Equal(t, 1, stepOnce(t, w), snap.After)
		for _, want := range snap.Workflows {
			got := workflowRow(t, c, int64(want["id"].(float64)))
			require.Equal(t, want["state"], got.State, "%s: state", snap.After)
			require.Equal(t, want["status"], got.Status, "%s: status", snap.After)
		}
		compareJobs(t, c, snap.After, fixed(snap.Jobs))
		compareLogs(t, c, snap.After, snap.Logs)
	}
	require.Equal(t, 0, stepOnce(t, w), "nothing left to claim")
}
