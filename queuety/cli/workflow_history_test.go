package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/workflow"
)

// TestWorkflowStateAt: state-at prints the public state recorded when a
// step completed (Queuety::workflow_state_at); a step with none is exit 3.
func TestWorkflowStateAt(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	id := dispatchWorkflow(t, dsn, workflow.New("count").Then("IncStep").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, id)

	r := runOK(t, on(dsn, "workflow", "state-at", itoa(id), "0", "--json")...)
	require.JSONEq(t, `{"n":1}`, r.stdout)
	r = runOK(t, on(dsn, "workflow", "state-at", itoa(id), "1")...)
	require.Contains(t, r.stdout, "State at step 1 for workflow #"+itoa(id)+":")
	require.Contains(t, r.stdout, `"n": 2`)

	r = run(t, on(dsn, "workflow", "state-at", itoa(id), "7")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	require.Contains(t, r.stderr, "No recorded state found for workflow #"+itoa(id)+" at step 7.")
	r = run(t, on(dsn, "workflow", "state-at", "999999", "0")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "workflow", "state-at", itoa(id), "-1")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

// TestWorkflowRewind: a completed workflow rewound to step 0 takes the
// state step 0 left, runs again from step 1 (one job enqueued, logged
// workflow_rewound) and completes as before; a second rewind buries the
// first one's job ("Superseded by workflow rewind"), a processing one too;
// the last step and a
// step with no recorded state are refused.
func TestWorkflowRewind(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatchWorkflow(t, dsn, workflow.New("count").Then("IncStep").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, id)

	r := runOK(t, on(dsn, "workflow", "rewind", itoa(id), "0")...)
	require.Equal(t, "Workflow #"+itoa(id)+" rewound to step 0.\n", r.stdout)
	var st statusView
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(id), "--json")...), &st)
	require.Equal(t, "running", st.Status)
	require.Equal(t, 1, st.CurrentStep)
	require.JSONEq(t, `{"n":1}`, string(st.State))
	pendingStep1 := "SELECT COUNT(*) FROM `" + jobsTable + "` WHERE workflow_id = ? AND status = 'pending' AND step_index = 1 AND handler = 'IncStep'"
	require.Equal(t, 1, count(t, db, pendingStep1, id))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"` WHERE workflow_id = ? AND event = 'workflow_rewound' AND context = '{\"rewound_to_step\":0}'", id))

	// Rewinding again supersedes the job the first rewind enqueued, even
	// one a worker holds: it is buried, so it never completes the step.
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', reserved_at = NOW(), attempts = 1 WHERE workflow_id = ? AND status = 'pending'", id)
	runOK(t, on(dsn, "workflow", "rewind", itoa(id), "0")...)
	require.Equal(t, 1, count(t, db, pendingStep1, id))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ? AND status = 'buried' AND error_message = 'Superseded by workflow rewind'", id))

	runWorkflows(t, dsn, id)
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(id), "--json")...), &st)
	require.Equal(t, "completed", st.Status)
	require.JSONEq(t, `{"n":3}`, string(st.State))

	r = run(t, on(dsn, "workflow", "rewind", itoa(id), "2")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "has no step after step 2")
	r = run(t, on(dsn, "workflow", "rewind", itoa(id), "9")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "No recorded state found for workflow "+itoa(id)+" at step 9.")
	r = run(t, on(dsn, "workflow", "rewind", "999999", "0")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "workflow", "rewind", itoa(id))...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

// TestWorkflowFork: a fork is a running copy at the same step with its
// own step job, logged workflow_forked on both; both then complete.
func TestWorkflowFork(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatchWorkflow(t, dsn, workflow.New("pair").Then("IncStep").Then("IncStep"), map[string]any{"n": 5})

	r := runOK(t, on(dsn, "workflow", "fork", itoa(id), "--json")...)
	var forked statusView
	decodeJSON(t, r, &forked)
	require.NotEqual(t, id, forked.WorkflowID)
	require.True(t, strings.HasPrefix(forked.Name, "pair_fork_"), forked.Name)
	require.Equal(t, "running", forked.Status)
	require.Equal(t, 0, forked.CurrentStep)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ? AND status = 'pending' AND step_index = 0", forked.WorkflowID))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"` WHERE workflow_id = ? AND event = 'workflow_forked' AND context = ?", id, `{"forked_workflow_id":`+itoa(forked.WorkflowID)+`}`))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"` WHERE workflow_id = ? AND event = 'workflow_forked' AND context = ?", forked.WorkflowID, `{"forked_from_workflow_id":`+itoa(id)+`}`))

	runWorkflows(t, dsn, id, forked.WorkflowID)
	for _, w := range []int64{id, forked.WorkflowID} {
		var st statusView
		decodeJSON(t, runOK(t, on(dsn, "workflow", "status", itoa(w), "--json")...), &st)
		require.Equal(t, "completed", st.Status)
		require.JSONEq(t, `{"n":7}`, string(st.State))
	}
	// Each step ran once per workflow: 2 jobs each, all completed.
	require.Equal(t, 4, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'completed'"))

	r = runOK(t, on(dsn, "workflow", "fork", itoa(id))...)
	require.Contains(t, r.stdout, "Workflow #"+itoa(id)+" forked. New workflow ID: ")
	r = run(t, on(dsn, "workflow", "fork", "999999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
}

// TestWorkflowExportOutputAndReplay: export --output writes the file; a
// replay of a completed workflow copies it (completed, at its last step,
// its events plus workflow_replayed, its logs, artifacts, signals, chunks
// and wait dependencies, no job); a replay of a running one
// enqueues its current step, which then runs.
func TestWorkflowExportOutputAndReplay(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	dir := t.TempDir()
	done := dispatchWorkflow(t, dsn, workflow.New("done").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, done)
	live := dispatchWorkflow(t, dsn, workflow.New("live").Then("IncStep"), map[string]any{"n": 40})

	// History a replay copies besides the events and logs.
	exec1(t, db, "INSERT INTO `wp_queuety_artifacts` (workflow_id, artifact_key, kind, content, metadata, step_index) VALUES (?, 'report', 'json', '{\"ok\":true}', '{\"by\":\"test\"}', 1)", done)
	exec1(t, db, "INSERT INTO `wp_queuety_artifacts` (workflow_id, artifact_key, kind, content) VALUES (?, 'note', 'text', 'plain words')", done)
	exec1(t, db, "INSERT INTO `wp_queuety_signals` (workflow_id, signal_name, payload, received_at) VALUES (?, 'approval', '{\"by\":\"ana\"}', '2026-11-30 10:00:00')", done)
	exec1(t, db, "INSERT INTO `wp_queuety_chunks` (job_id, workflow_id, step_index, chunk_index, content) VALUES (5, ?, 1, 0, 'chunk-0')", done)
	exec1(t, db, "INSERT INTO `wp_queuety_workflow_dependencies` (waiting_workflow_id, step_index, dependency_workflow_id) VALUES (?, 1, ?)", done, live)

	doneFile, liveFile := filepath.Join(dir, "done.json"), filepath.Join(dir, "live.json")
	r := runOK(t, on(dsn, "workflow", "export", itoa(done), "--output", doneFile)...)
	require.Equal(t, "Workflow #"+itoa(done)+" exported to "+doneFile+".\n", r.stdout)
	b, err := os.ReadFile(doneFile)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(runOK(t, on(dsn, "workflow", "export", itoa(done))...).stdout), string(b))
	runOK(t, on(dsn, "workflow", "export", itoa(live), "--output="+liveFile)...)
	copied := []string{
		"SELECT COUNT(*) FROM `" + logsTable + "` WHERE workflow_id = ? AND job_id IS NULL",
		"SELECT COUNT(*) FROM `wp_queuety_artifacts` WHERE workflow_id = ? AND ((artifact_key = 'report' AND kind = 'json' AND content = '{\"ok\":true}' AND metadata = '{\"by\":\"test\"}' AND step_index = 1) OR (artifact_key = 'note' AND content = 'plain words'))",
		"SELECT COUNT(*) FROM `wp_queuety_signals` WHERE workflow_id = ? AND signal_name = 'approval' AND payload = '{\"by\":\"ana\"}' AND received_at = '2026-11-30 10:00:00'",
		"SELECT COUNT(*) FROM `wp_queuety_chunks` WHERE workflow_id = ? AND job_id = 5 AND content = 'chunk-0'",
		"SELECT COUNT(*) FROM `wp_queuety_workflow_dependencies` WHERE waiting_workflow_id = ? AND step_index = 1",
	}
	exported := make([]int, len(copied)) // the source's rows as exported
	for i, q := range copied {
		exported[i] = count(t, db, strings.Replace(q, " AND job_id IS NULL", "", 1), done)
	}
	// The live one is cancelled so only its replay's job is left to run.
	runOK(t, on(dsn, "workflow", "cancel", itoa(live))...)

	var copyOf statusView
	decodeJSON(t, runOK(t, on(dsn, "workflow", "replay", doneFile, "--json")...), &copyOf)
	require.True(t, strings.HasPrefix(copyOf.Name, "done_replay_"), copyOf.Name)
	require.Equal(t, "completed", copyOf.Status)
	require.Equal(t, 2, copyOf.CurrentStep)
	require.JSONEq(t, `{"n":2}`, string(copyOf.State))
	events := "SELECT COUNT(*) FROM `wp_queuety_workflow_events` WHERE workflow_id = ?"
	require.Equal(t, count(t, db, events, done)+1, count(t, db, events, copyOf.WorkflowID))
	require.Equal(t, 1, count(t, db, events+" AND event = 'workflow_replayed' AND handler = '__queuety_replay' AND context LIKE ?", copyOf.WorkflowID, `{"source_workflow_id":`+itoa(done)+`,"source_status":"completed"%`))
	require.Equal(t, 0, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ?", copyOf.WorkflowID))
	for i, q := range copied {
		require.Equal(t, exported[i], count(t, db, q, copyOf.WorkflowID), q)
		require.Positive(t, exported[i], q)
	}

	r = runOK(t, on(dsn, "workflow", "replay", liveFile)...)
	require.Contains(t, r.stdout, "Workflow replayed. New workflow ID: ")
	newID := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(r.stdout, "Workflow replayed. New workflow ID: ")), ".")
	var replayed statusView
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", newID, "--json")...), &replayed)
	require.Equal(t, "running", replayed.Status)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE workflow_id = ? AND status = 'pending' AND step_index = 0", replayed.WorkflowID))
	runWorkflows(t, dsn, replayed.WorkflowID)
	decodeJSON(t, runOK(t, on(dsn, "workflow", "status", newID, "--json")...), &replayed)
	require.Equal(t, "completed", replayed.Status)
	require.JSONEq(t, `{"n":41}`, string(replayed.State))

	// Bad files say what is wrong and write nothing.
	before := count(t, db, "SELECT COUNT(*) FROM `"+workflowsTable+"`")
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{nope"), 0o600))
	noWorkflow := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(noWorkflow, []byte(`{"events":[]}`), 0o600))
	for file, msg := range map[string]string{
		filepath.Join(dir, "missing.json"): "File not found",
		bad:                                "Invalid JSON",
		noWorkflow:                         "Invalid export data: missing workflow key.",
	} {
		r := run(t, on(dsn, "workflow", "replay", file)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, msg, r.String())
	}
	require.Equal(t, before, count(t, db, "SELECT COUNT(*) FROM `"+workflowsTable+"`"))
}
