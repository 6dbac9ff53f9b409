package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// TestCorruptWorkflowCommands: one workflow whose state cannot be read
// never blinds `workflow list` (text and JSON) for the others, and can
// still be cancelled; `job bury` still works on its step job.
func TestCorruptWorkflowCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	good := dispatchWorkflow(t, dsn, workflow.New("good").Then("IncStep"), map[string]any{"n": 0})
	bad := dispatchWorkflow(t, dsn, workflow.New("bad").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	other := dispatchWorkflow(t, dsn, workflow.New("deep").Then("IncStep"), map[string]any{"n": 0})
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET state = 'not json{' WHERE id = ?", bad)
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET state = ? WHERE id = ?",
		`{"x":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`}`, other)

	r := runOK(t, on(dsn, "workflow", "list")...)
	require.Contains(t, r.stdout, "good")
	lines := strings.Split(r.stdout, "\n")
	var badLine string
	for _, l := range lines {
		if strings.HasPrefix(l, itoa(bad)+" ") {
			badLine = l
		}
	}
	require.Contains(t, badLine, "running", r.stdout)
	require.Contains(t, badLine, "corrupt: workflow: state is not valid JSON", r.stdout)

	var list []struct {
		WorkflowID int64   `json:"workflow_id"`
		Status     string  `json:"status"`
		Corrupt    *string `json:"corrupt"`
	}
	decodeJSON(t, runOK(t, on(dsn, "workflow", "list", "--json")...), &list)
	require.Len(t, list, 3)
	for _, w := range list {
		require.Equal(t, "running", w.Status)
		if w.WorkflowID == good {
			require.Nil(t, w.Corrupt, "absent for a readable row")
		} else {
			require.NotNil(t, w.Corrupt, "workflow %d", w.WorkflowID)
			require.Contains(t, *w.Corrupt, "state is not valid JSON")
		}
	}
	r = runOK(t, on(dsn, "workflow", "status", itoa(bad))...)
	require.Contains(t, r.stdout, "corrupt: ")

	var stepJob int64
	require.NoError(t, db.Get(&stepJob, "SELECT id FROM `"+jobsTable+"` WHERE workflow_id = ?", other))
	runOK(t, on(dsn, "job", "bury", itoa(stepJob))...)

	r = runOK(t, on(dsn, "workflow", "cancel", itoa(bad))...)
	require.Contains(t, r.stdout, "cancelled")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+workflowsTable+"` WHERE id = ? AND status = 'cancelled' AND state = 'not json{'", bad))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"` WHERE workflow_id = ? AND event = 'debug' AND error_message LIKE '%cannot be read%'", bad))
}

// TestStuckRowsAreVisible: status (text and JSON) counts the rows that
// can never run by kind, `job list` marks them and lists them with
// --stuck, and `job inspect` shows what blocks a job.
func TestStuckRowsAreVisible(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	a := dispatch(t, dsn, "queuety.noop").ID
	b := dispatch(t, dsn, "--after", itoa(a), "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET depends_on = ? WHERE id = ?", b, a)
	self := dispatch(t, dsn, "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET depends_on = id WHERE id = ?", self)
	missing := dispatch(t, dsn, "--after", "999999", "--queue", "mail", "send").ID
	zero := dispatch(t, dsn, "--concurrency-group", "g", "--concurrency-limit", "1", "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET concurrency_limit = 0 WHERE id = ?", zero)
	orphan := dispatch(t, dsn, "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET workflow_id = 777, step_index = 0 WHERE id = ?", orphan)
	lost := dispatch(t, dsn, "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', attempts = 1, reserved_at = NULL WHERE id = ?", lost)
	fine := dispatch(t, dsn, "queuety.noop").ID
	short := dispatchWorkflow(t, dsn, workflow.New("short").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET total_steps = 5 WHERE id = ?", short)

	// status, text
	r := runOK(t, on(dsn, "status")...)
	require.Contains(t, r.stdout, "Needs attention: 8 rows can never run as they are", r.stdout)
	for _, want := range []string{
		`(?m)^\s+default\s+dependency_cycle\s+2\s+jobs ` + itoa(a) + `, ` + itoa(b) + `\s+pending; its depends_on chain loops back to it$`,
		`(?m)^\s+default\s+dependency_self\s+1\s+jobs ` + itoa(self) + `\s`,
		`(?m)^\s+mail\s+dependency_missing\s+1\s+jobs ` + itoa(missing) + `\s`,
		`(?m)^\s+default\s+concurrency_limit_zero\s+1\s+jobs ` + itoa(zero) + `\s`,
		`(?m)^\s+default\s+workflow_missing\s+1\s+jobs ` + itoa(orphan) + `\s`,
		`(?m)^\s+default\s+reserved_at_null\s+1\s+jobs ` + itoa(lost) + `\s`,
		`(?m)^\s+default\s+workflow_steps_short\s+1\s+workflows ` + itoa(short) + `\s`,
	} {
		require.Regexp(t, want, r.stdout)
	}

	// status, JSON: under each queue
	var stats []struct {
		Queue          string `json:"queue"`
		NeedsAttention []struct {
			Kind   string  `json:"kind"`
			Table  string  `json:"table"`
			Count  int     `json:"count"`
			IDs    []int64 `json:"ids"`
			Reason string  `json:"reason"`
		} `json:"needs_attention"`
	}
	decodeJSON(t, runOK(t, on(dsn, "status", "--json")...), &stats)
	kinds := map[string]int{}
	for _, s := range stats {
		for _, n := range s.NeedsAttention {
			kinds[s.Queue+"/"+n.Kind] = n.Count
			require.NotEmpty(t, n.Reason)
			require.NotEmpty(t, n.IDs)
		}
	}
	require.Equal(t, map[string]int{
		"default/dependency_cycle": 2, "default/dependency_self": 1, "mail/dependency_missing": 1,
		"default/concurrency_limit_zero": 1, "default/workflow_missing": 1, "default/reserved_at_null": 1,
		"default/workflow_steps_short": 1,
	}, kinds)

	// job list marks them; --stuck lists only them
	r = runOK(t, on(dsn, "job", "list")...)
	require.Regexp(t, `(?m)^`+itoa(missing)+`\s.*stuck: depends on job 999999, which does not exist$`, r.stdout)
	require.Regexp(t, `(?m)^`+itoa(fine)+`\s.*\d\d:\d\d:\d\d\s*$`, r.stdout, "a runnable job has no note")
	var views []struct {
		ID    int64 `json:"id"`
		Stuck *struct {
			Kind   string `json:"kind"`
			Reason string `json:"reason"`
		} `json:"stuck"`
	}
	decodeJSON(t, runOK(t, on(dsn, "job", "list", "--stuck", "--json")...), &views)
	var ids []int64
	for _, v := range views {
		ids = append(ids, v.ID)
		require.NotNil(t, v.Stuck, "job %d", v.ID)
	}
	require.Equal(t, []int64{lost, orphan, zero, missing, self, b, a}, ids)
	views = nil
	decodeJSON(t, runOK(t, on(dsn, "job", "list", "--stuck", "--queue", "mail", "--json")...), &views)
	require.Len(t, views, 1)
	require.Equal(t, "dependency_missing", views[0].Stuck.Kind)
	views = nil
	decodeJSON(t, runOK(t, on(dsn, "job", "list", "--json")...), &views)
	for _, v := range views {
		if v.ID == fine {
			require.Nil(t, v.Stuck)
		}
	}

	// job inspect
	r = runOK(t, on(dsn, "job", "inspect", itoa(a))...)
	require.Contains(t, r.stdout, "  stuck: depends on job "+itoa(b)+", which depends back on it")
	require.Contains(t, r.stdout, "  workflow -, step -, depends on "+itoa(b)+"\n")
	r = runOK(t, on(dsn, "job", "inspect", itoa(zero))...)
	require.Contains(t, r.stdout, `  stuck: concurrency group "g" has limit 0: never admitted`)
	require.Contains(t, r.stdout, "  concurrency group g (limit 0), session -\n")
	r = runOK(t, on(dsn, "job", "inspect", itoa(orphan))...)
	require.Contains(t, r.stdout, "  workflow 777, step 0, depends on -\n")
	r = runOK(t, on(dsn, "job", "inspect", itoa(fine))...)
	require.NotContains(t, r.stdout, "stuck")
}

// TestTextOutputEscapesControlCharacters: a handler name, queue, error
// message or workflow name with terminal escape sequences reaches the text
// outputs escaped (one line per row, no ESC byte), and the JSON outputs
// unchanged.
func TestTextOutputEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	const clear, title = "App\\Jobs\\Wipe\x1b[2J", "Evil\x1b]0;pwned\x07"
	id := dispatch(t, dsn, "queuety.noop").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET handler = ?, queue = ?, error_message = ? WHERE id = ?",
		clear, "q\x1b[31m", "line one\nline two\r\u009b1m", id)
	wf := dispatchWorkflow(t, dsn, workflow.New("named").Then("IncStep"), nil)
	exec1(t, db, "UPDATE `"+workflowsTable+"` SET name = ?, error_message = ? WHERE id = ?", title, "oops\x1b[H", wf)

	outputs := map[string]string{}
	for name, args := range map[string][]string{
		"job list":        {"job", "list"},
		"job inspect":     {"job", "inspect", itoa(id)},
		"status":          {"status"},
		"workflow list":   {"workflow", "list"},
		"workflow status": {"workflow", "status", itoa(wf)},
	} {
		out := runOK(t, on(dsn, args...)...).stdout
		require.NotContains(t, out, "\x1b", name)
		require.NotContains(t, out, "\x07", name)
		require.NotContains(t, out, "\r", name)
		outputs[name] = out
	}
	require.Contains(t, outputs["job list"], `App\Jobs\Wipe\x1b[2J`, "backslashes of class names stay as they are")
	require.Contains(t, outputs["job list"], `q\x1b[31m`)
	require.Contains(t, outputs["job inspect"], `  error: line one\nline two\r\u009b1m`+"\n")
	require.Contains(t, outputs["status"], `q\x1b[31m`)
	require.Contains(t, outputs["workflow list"], `Evil\x1b]0;pwned\x07`)
	require.Contains(t, outputs["workflow status"], `Evil\x1b]0;pwned\x07`)
	require.Contains(t, outputs["workflow status"], `error: oops\x1b[H`)

	var job struct {
		Handler      string `json:"handler"`
		Queue        string `json:"queue"`
		ErrorMessage string `json:"error_message"`
	}
	decodeJSON(t, runOK(t, on(dsn, "job", "inspect", itoa(id), "--json")...), &job)
	require.Equal(t, clear, job.Handler, "JSON keeps the stored bytes")
	require.Equal(t, "q\x1b[31m", job.Queue)
	require.Equal(t, "line one\nline two\r\u009b1m", job.ErrorMessage)
	var list []struct {
		Name string `json:"name"`
	}
	decodeJSON(t, runOK(t, on(dsn, "workflow", "list", "--json")...), &list)
	require.Equal(t, title, list[0].Name)
}
