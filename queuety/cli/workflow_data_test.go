package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/workflow"
)

// workflow input is the plugin's submit_workflow_input: a signal named
// "input" (or --signal) with --data / --payload.
func TestWorkflowInput(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatchWorkflow(t, dsn, workflow.New("w").Then("Gone"), nil)

	r := runOK(t, on(dsn, "workflow", "input", fmt10(id), "--data", `{"answer":42}`)...)
	require.Equal(t, "Input sent to workflow #"+fmt10(id)+".\n", r.stdout)
	r = runOK(t, on(dsn, "workflow", "input", fmt10(id), "--signal", "form", "--payload", `{"a":"b/c"}`, "--json")...)
	var st statusView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.Equal(t, id, st.WorkflowID)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wp_queuety_signals WHERE workflow_id = ? AND signal_name = 'input' AND payload = ?", id, `{"answer":42}`))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wp_queuety_signals WHERE workflow_id = ? AND signal_name = 'form'", id))

	r = run(t, on(dsn, "workflow", "input", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "workflow", "input", fmt10(id), "--data", "[1]")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

// workflow artifacts lists a workflow's artifacts by key as the plugin's
// ArtifactStore::list (content only with --with-content); workflow
// artifact prints one; a missing one exits 3.
func TestWorkflowArtifacts(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := context.Background()
	id := dispatchWorkflow(t, dsn, workflow.New("w").Then("Gone"), nil)
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	defer c.Close()
	report, err := phpjson.FromGo(map[string]any{"rows": 3, "path": "a/b"})
	require.NoError(t, err)
	require.NoError(t, c.PutArtifact(ctx, id, "report", report, "json", 0, nil))
	require.NoError(t, c.PutArtifact(ctx, id, "log", phpjson.String("line 1\nline 2"), "text", -1, phpjson.NewObject().Set("lines", phpjson.Int(2))))

	r := runOK(t, on(dsn, "workflow", "artifacts", fmt10(id))...)
	require.Regexp(t, `(?s)^KEY\s+KIND\s+STEP\s+UPDATED\nlog\s+text\s+-\s+\S+ \S+\nreport\s+json\s+0\s+`, r.stdout)

	r = runOK(t, on(dsn, "workflow", "artifacts", fmt10(id), "--json")...)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list), r.stdout)
	require.Len(t, list, 2)
	require.Equal(t, "log", list[0]["key"])
	require.Equal(t, map[string]any{"lines": 2.0}, list[0]["metadata"])
	require.Nil(t, list[0]["step_index"])
	require.NotContains(t, list[0], "content")
	require.Equal(t, []any{}, list[1]["metadata"], "no metadata is [] as in PHP")

	r = runOK(t, on(dsn, "workflow", "artifacts", fmt10(id), "--json", "--with-content")...)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Equal(t, "line 1\nline 2", list[0]["content"])
	require.Equal(t, map[string]any{"rows": 3.0, "path": "a/b"}, list[1]["content"])

	r = runOK(t, on(dsn, "workflow", "artifact", fmt10(id), "report")...)
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &one), r.stdout)
	require.Equal(t, "report", one["key"])
	require.Equal(t, map[string]any{"rows": 3.0, "path": "a/b"}, one["content"])

	r = run(t, on(dsn, "workflow", "artifact", fmt10(id), "nope")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "workflow", "artifacts", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	r = run(t, on(dsn, "workflow", "artifact", fmt10(id))...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

// workflow dispatch starts a workflow from a definition bundle as
// build_runtime_definition writes it: the rows are those the Go client
// writes for the same bundle; an idempotency key dispatches once.
func TestWorkflowDispatchDefinition(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	def, err := workflow.New("onboarding").Then("App\\Steps\\Welcome").Then("App\\Steps\\Follow").OnQueue("mail").RuntimeDefinition()
	require.NoError(t, err)
	raw, err := phpjson.Encode(phpjson.ObjectValue(def.Raw))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "onboarding.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))

	r := runOK(t, on(dsn, "workflow", "dispatch", path, "--state", `{"user_id":7}`)...)
	require.Equal(t, "Workflow #1 dispatched.\n", r.stdout)
	want, err := def.Dispatch(phpjson.NewObject().Set("user_id", phpjson.Int(7)), workflow.DefinitionDispatchOptions{})
	require.NoError(t, err)
	var state, queue, handler string
	require.NoError(t, db.QueryRow("SELECT state FROM "+workflowsTable+" WHERE id = 1").Scan(&state))
	require.Equal(t, string(want.Workflow.State), state)
	require.NoError(t, db.QueryRow("SELECT queue, handler FROM "+jobsTable+" WHERE workflow_id = 1").Scan(&queue, &handler))
	require.Equal(t, "mail", queue)
	require.Equal(t, "App\\Steps\\Welcome", handler)

	r = runOK(t, on(dsn, "workflow", "dispatch", path, "--idempotency-key", "user-7", "--json")...)
	var st statusView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.EqualValues(t, 2, st.WorkflowID)
	r = runOK(t, on(dsn, "workflow", "dispatch", path, "--idempotency-key", "user-7")...)
	require.Equal(t, "Workflow #2 already dispatched with this idempotency key.\n", r.stdout)
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM "+workflowsTable))

	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"name":"x","steps":[]}`), 0o600))
	notJSON := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(notJSON, []byte(`{"name":`), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{empty}, "Workflow definition must have at least one step."},
		{[]string{notJSON}, "not JSON"},
		{[]string{filepath.Join(t.TempDir(), "missing.json")}, "no such file"},
		{[]string{path, "--state", "[1]"}, `--state "[1]": want a JSON object`},
		{[]string{}, "takes one definition file"},
	} {
		r := run(t, on(dsn, append([]string{"workflow", "dispatch"}, tc.args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want)
	}
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM "+workflowsTable), "refused dispatches write nothing")
}

func fmt10(id int64) string { return strconv.FormatInt(id, 10) }

// TestWorkflowDispatchStepLimit (N19): a definition of 255 steps is
// dispatched; one of 256 or 300 steps is refused as a usage error naming
// the limit, never the server's raw "Out of range", and writes nothing.
func TestWorkflowDispatchStepLimit(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	def := func(n int) string {
		b := workflow.New("big")
		for i := range n {
			b.Then("App\\Steps\\S" + strconv.Itoa(i))
		}
		d, err := b.RuntimeDefinition()
		require.NoError(t, err)
		raw, err := phpjson.Encode(phpjson.ObjectValue(d.Raw))
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "big.json")
		require.NoError(t, os.WriteFile(path, raw, 0o600))
		return path
	}
	runOK(t, on(dsn, "workflow", "dispatch", def(255))...)
	for _, n := range []int{256, 300} {
		r := run(t, on(dsn, "workflow", "dispatch", def(n))...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "at most 255 steps")
		require.NotContains(t, r.stderr, "Out of range")
	}
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM "+workflowsTable))
}
