package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/workflow"
)

const workflowsTable = "wp_queuety_workflows"

// dispatchWorkflow stores a built workflow through the Go client.
func dispatchWorkflow(t *testing.T, dsn string, b *workflow.Builder, initial map[string]any) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	defer c.Close()
	v, err := phpjson.FromGo(initial)
	require.NoError(t, err)
	o, _ := v.AsObject()
	if o == nil {
		o = phpjson.NewObject()
	}
	d, err := b.Build(o)
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	return id
}

// runWorkflows drains the workflow steps of IncStep with a real worker.
func runWorkflows(t *testing.T, dsn string, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, Workflows: true, PollInterval: 10 * time.Millisecond,
		ShutdownGrace: 5 * time.Second, RescueSchedule: "off"})
	require.NoError(t, err)
	defer c.Close()
	reg := queuety.NewRegistry()
	reg.RegisterStep("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		i, _ := n.AsInt64()
		return phpjson.NewObject().Set("n", phpjson.Int(i+1)), nil
	})
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	db := openDB(t, dsn)
	for _, id := range ids {
		waitFor(t, 10*time.Second, "workflow done", func() bool {
			return count(t, db, "SELECT COUNT(*) FROM `"+workflowsTable+"` WHERE id = ? AND status IN ('completed','failed')", id) == 1
		})
	}
	require.NoError(t, w.Stop(ctx))
}

type statusView struct {
	WorkflowID      int64           `json:"workflow_id"`
	Name            string          `json:"name"`
	Status          string          `json:"status"`
	CurrentStep     int             `json:"current_step"`
	CurrentStepName *string         `json:"current_step_name"`
	WaitType        *string         `json:"wait_type"`
	WaitingFor      []string        `json:"waiting_for"`
	WaitDetails     json.RawMessage `json:"wait_details"`
	State           json.RawMessage `json:"state"`
	ErrorMessage    *string         `json:"error_message"`
}

func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)

	done := dispatchWorkflow(t, dsn, workflow.New("done").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, done)
	waiting := dispatchWorkflow(t, dsn, workflow.New("approval").Then("PhpStep").WaitForApproval(), map[string]any{"doc": 7})

	// list
	r := runOK(t, on(dsn, "workflow", "list")...)
	require.Contains(t, r.stdout, "ID")
	require.Contains(t, r.stdout, "approval")
	var list []statusView
	decodeJSON(t, runOK(t, on(dsn, "workflow", "list", "--status", "completed", "--json")...), &list)
	require.Len(t, list, 1)
	require.Equal(t, done, list[0].WorkflowID)
	decodeJSON(t, runOK(t, on(dsn, "workflow", "list", "--name", "nope", "--json")...), &list)
	require.Empty(t, list)

	// status
	var st statusView
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(done), "--json")...), &st)
	require.Equal(t, "completed", st.Status)
	require.JSONEq(t, `{"n":2}`, string(st.State))
	r = runOK(t, on(dsn, "workflow", "status", itoa(done))...)
	require.Contains(t, r.stdout, "Workflow #"+itoa(done)+"  done  (completed)")

	// timeline
	var events []struct {
		Event string `json:"event"`
	}
	decodeJSON(t, runOK(t, on(dsn, "workflow", "timeline", itoa(done), "--json")...), &events)
	require.Len(t, events, 4)
	require.Equal(t, "step_started", events[0].Event)
	r = runOK(t, on(dsn, "workflow", "timeline", itoa(done), "--limit", "1")...)
	require.Equal(t, 2, strings.Count(strings.TrimSpace(r.stdout), "\n")+1, r.String())

	// export
	r = runOK(t, on(dsn, "workflow", "export", itoa(done))...)
	require.True(t, strings.HasPrefix(r.stdout, "{\n    \"workflow\": {"), r.stdout)
	var doc map[string]json.RawMessage
	decodeJSON(t, runOK(t, on(dsn, "workflow", "export", itoa(done), "--json")...), &doc)
	require.Contains(t, doc, "wait_dependencies")

	// pause / resume
	r = runOK(t, on(dsn, "workflow", "pause", itoa(waiting))...)
	require.Equal(t, "Workflow #"+itoa(waiting)+" paused.\n", r.stdout)
	r = run(t, on(dsn, "workflow", "pause", itoa(waiting))...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "is not running")
	decodeJSON(t, runOK(t, on(dsn, "workflow", "resume", itoa(waiting), "--json")...), &st)
	require.Equal(t, "running", st.Status)

	// a workflow parked on the approval wait, as the placeholder leaves it
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET status = 'waiting_for_signal', current_step = 1, state = JSON_SET(state, '$._wait', JSON_OBJECT('type','signal','step_index',1,'wait_mode','all','result_key','approval','waiting_for',JSON_ARRAY('approval'),'step_name','wait_for_approval')) WHERE id = ?", waiting)
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(waiting), "--json")...), &st)
	require.Equal(t, "waiting_for_signal", st.Status)
	require.Equal(t, "signal", *st.WaitType)
	// The step is the plugin's 0-based current_step, as `wp queuety
	// workflow status` and the dashboard print it (was 2/2 here).
	r = runOK(t, on(dsn, "workflow", "status", itoa(waiting))...)
	require.Contains(t, r.stdout, "  step 1/2 wait_for_approval [", r.stdout)
	r = runOK(t, on(dsn, "workflow", "list", "--status", "waiting_for_signal")...)
	require.Contains(t, r.stdout, "  1/2 wait_for_approval  ", r.stdout)
	require.Equal(t, []string{"approval"}, st.WaitingFor)
	var details struct {
		Remaining []string `json:"remaining"`
		Matched   []string `json:"matched"`
	}
	require.NoError(t, json.Unmarshal(st.WaitDetails, &details))
	require.Equal(t, []string{"approval"}, details.Remaining)
	require.Empty(t, details.Matched)

	// approve resumes it (the signal matches the wait)
	r = runOK(t, on(dsn, "workflow", "approve", itoa(waiting), "--payload", `{"by":"ana"}`)...)
	require.Contains(t, r.stdout, `Signal "approval" sent to workflow #`+itoa(waiting))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_signals` WHERE workflow_id = ? AND signal_name = 'approval'", waiting))
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(waiting), "--json")...), &st)
	require.Equal(t, "completed", st.Status)
	require.JSONEq(t, `{"doc":7,"approval":{"by":"ana"}}`, string(st.State))

	// signal and reject store rows
	other := dispatchWorkflow(t, dsn, workflow.New("other").Then("PhpStep"), nil)
	runOK(t, on(dsn, "workflow", "signal", itoa(other), "go", "--payload", `{"x":1}`)...)
	runOK(t, on(dsn, "workflow", "reject", itoa(other))...)
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_signals` WHERE workflow_id = ?", other))

	// retry a failed workflow; cancel
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET status = 'failed', error_message = 'boom', failed_at = NOW() WHERE id = ?", other)
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'buried' WHERE workflow_id = ?", other)
	r = runOK(t, on(dsn, "workflow", "retry", itoa(other))...)
	require.Contains(t, r.stdout, "retried")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ? AND status = 'pending'", other))
	decodeJSON(t, runOK(t, on(dsn, "workflow", "cancel", itoa(other), "--json")...), &st)
	require.Equal(t, "cancelled", st.Status)
	require.Equal(t, 0, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ? AND status = 'pending'", other))
	r = run(t, on(dsn, "workflow", "cancel", itoa(other))...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "is already cancelled")

	// not found: exit 3
	for _, args := range [][]string{
		{"status", "999999"}, {"timeline", "999999"}, {"export", "999999"}, {"cancel", "999999"},
		{"pause", "999999"}, {"resume", "999999"}, {"retry", "999999"}, {"signal", "999999", "go"}, {"approve", "999999"},
	} {
		r := run(t, on(dsn, append([]string{"workflow"}, args...)...)...)
		require.Equal(t, cli.ExitNotFound, r.code, r.String())
	}
	// usage: exit 2
	for _, args := range [][]string{
		{"status"}, {"status", "x"}, {"status", "1", "2"}, {"signal", "1"}, {"signal", "1", " "},
		{"approve", "1", "--payload", "[1]"}, {"list", "--status", "bogus"}, {"list", "--limit", "0"}, {"cancel", "-3"},
		{"timeline", "1", "--limit", "-1"},
	} {
		r := run(t, on(dsn, append([]string{"workflow"}, args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
	}
	r = runOK(t, "workflow", "signal", "--help")
	require.Contains(t, r.stdout, "queuety workflow signal 42 approved --payload")
}

func TestBenchWorkflows(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	// --bench-dsn: bench runs in this (empty) database, in bench_ tables.
	r := runOK(t, "bench", "workflows", "--bench-dsn", dsn, "--count", "50", "--steps", "3", "--json")
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.EqualValues(t, 50, res["workflows"])
	require.EqualValues(t, 3, res["steps_per_workflow"])
	require.Greater(t, res["steps_per_second"], 0.0)
	require.Greater(t, res["workflows_per_second"], 0.0)
	db := openDB(t, dsn)
	require.Equal(t, 50, count(t, db, "SELECT COUNT(*) FROM `bench_queuety_workflows` WHERE status = 'completed'"))
	require.Equal(t, 150, count(t, db, "SELECT COUNT(*) FROM `bench_queuety_jobs` WHERE status = 'completed'"))

	// Text output; the tables are emptied first.
	r = runOK(t, "bench", "workflows", "--bench-dsn", dsn, "--count", "10", "--steps", "2", "--concurrency", "5")
	require.Regexp(t, `(?m)^dispatched 10 workflows of 2 steps in \d+\.\d\ds\ndrained    20 steps in \d+\.\d\ds: \d+ steps/s, \d+ workflows/s \(concurrency 5\)`, r.stdout)
	require.Equal(t, 10, count(t, db, "SELECT COUNT(*) FROM `bench_queuety_workflows`"))

	// Profiles of the drain, for go tool pprof.
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	runOK(t, on(dsn, "bench", "workflows", "--count", "20", "--steps", "2", "--cpuprofile", cpu, "--memprofile", mem)...)
	for _, f := range []string{cpu, mem} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.Positive(t, st.Size(), f)
	}
	r = run(t, on(dsn, "bench", "workflows", "--count", "5", "--cpuprofile", filepath.Join(dir, "missing", "cpu.prof"))...)
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "--cpuprofile")

	for _, args := range [][]string{{"--count", "0"}, {"--steps", "0"}, {"--steps", "256"}, {"--concurrency", "0"}} {
		r := run(t, on(dsn, append([]string{"bench", "workflows"}, args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
	}
}

// bench local-activities times the three ways a step runs and counts
// their claims: every step claimed, chained after the first, local after
// the first.
func TestBenchLocalActivities(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "bench", "local-activities", "--runs", "2", "--steps", "3", "--json")...)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.EqualValues(t, 3, res["queued_claims_per_workflow"])
	require.EqualValues(t, 1, res["chained_claims_per_workflow"])
	require.EqualValues(t, 1, res["local_claims_per_workflow"])
	for _, k := range []string{"queued_p50_ms", "chained_p50_ms", "local_p50_ms", "ratio", "chained_ratio"} {
		require.Greater(t, res[k], 0.0, k)
	}
	r = runOK(t, on(dsn, "bench", "local-activities", "--runs", "1", "--steps", "2")...)
	require.Regexp(t, `(?m)^  queued steps: .*\(2 claims per workflow\)\n  chained steps: .*\(1 claims per workflow\)\n  local activities: .*\(1 claims per workflow\)\n  ratio \(queued/local, p50\): \d+\.\d\dx; chained/local: \d+\.\d\dx\n  queued:  CPU per workflow: daemon \d+ µs, .*\n  chained: CPU per workflow: .*\n  local:   CPU per workflow: .*$`, r.stdout)
	r = run(t, on(dsn, "bench", "local-activities", "--steps", "0")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}
