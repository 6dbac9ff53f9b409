package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/workflow"
)

// TestPluginCommandsParse walks the plugin's 42 `wp queuety` commands
// with every flag each takes, in the plugin's argument forms, and asserts
// that each is a command with those flags: none ends in "flag provided but
// not defined" or an unknown command, and the only usage errors are the
// confirmations kept on purpose, which name the flag (--yes).
func TestPluginCommandsParse(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	dir := t.TempDir()
	job := itoa(dispatch(t, dsn, "queuety.noop").ID)
	runOK(t, on(dsn, "job", "bury", itoa(dispatch(t, dsn, "queuety.noop").ID))...) // retry-buried has one to retry
	wf := dispatchWorkflow(t, dsn, workflow.New("parse").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, wf)
	id := itoa(wf)
	export := filepath.Join(dir, "wf.json")
	classes := filepath.Join(dir, "Jobs")
	require.NoError(t, os.MkdirAll(classes, 0o755))
	webhook := strings.TrimSpace(runOK(t, on(dsn, "webhook", "add", "job.completed", "http://127.0.0.1:9/h")...).stdout)
	require.Equal(t, "Webhook #1 registered for event 'job.completed'.", webhook)

	needsYes, refused := "pass --yes", 0
	for _, c := range []struct {
		args []string
		want string // a confirmation kept on purpose: when it refuses, it names its flag
	}{
		{args: []string{"work", "--queue=default", "--once"}},
		{args: []string{"work", "--queue", "default", "--once", "--workers=2"}},
		{args: []string{"work", "--once", "--min-workers=1", "--max-workers=2"}},
		{args: []string{"flush", "--queue=default"}},
		{args: []string{"dispatch", "queuety.noop", "--payload={\"a\":1}", "--queue=default", "--priority=1", "--delay=60"}},
		{args: []string{"status", "--queue=default"}},
		{args: []string{"list", "--queue=default", "--status=pending", "--format=table"}},
		{args: []string{"retry", job}},
		{args: []string{"retry-buried"}, want: needsYes},
		{args: []string{"bury", job}},
		{args: []string{"delete", job}, want: needsYes},
		{args: []string{"recover"}},
		{args: []string{"purge", "--older-than=30"}, want: needsYes},
		{args: []string{"pause", "emails"}},
		{args: []string{"resume", "emails"}},
		{args: []string{"inspect", job}},
		{args: []string{"metrics", "--minutes=60", "--format=json"}},
		{args: []string{"discover", classes, `App\Jobs`, "--register"}},
		{args: []string{"log", "--job=" + job, "--workflow=" + id, "--handler=IncStep", "--event=completed", "--since=2026-01-01", "--limit=5", "--format=csv"}},
		{args: []string{"log", "purge", "--older-than=30"}, want: needsYes},
		{args: []string{"schedule", "list", "--format=yaml"}},
		{args: []string{"schedule", "add", "report", "--every=1 hour", "--payload={}", "--queue=default"}},
		{args: []string{"schedule", "add", "nightly", "--cron=0 3 * * *"}},
		{args: []string{"schedule", "remove", "report"}, want: needsYes},
		{args: []string{"schedule", "run"}},
		{args: []string{"webhook", "add", "job.failed", "http://127.0.0.1:9/f"}},
		{args: []string{"webhook", "list", "--format=csv"}},
		{args: []string{"webhook", "remove", "1"}, want: needsYes},
		{args: []string{"workflow", "status", id}},
		{args: []string{"workflow", "retry", id}},
		{args: []string{"workflow", "approve", id, "--data={\"by\":\"ana\"}", "--signal=approval"}},
		{args: []string{"workflow", "reject", id, "--data={}", "--signal=rejected"}},
		{args: []string{"workflow", "input", id, "--data={}", "--signal=input"}},
		{args: []string{"workflow", "artifacts", id, "--format=json", "--limit=5", "--with-content"}},
		{args: []string{"workflow", "artifact", id, "report"}},
		{args: []string{"workflow", "pause", id}},
		{args: []string{"workflow", "cancel", id}},
		{args: []string{"workflow", "resume", id}},
		{args: []string{"workflow", "list", "--status=running", "--format=table", "--limit=5"}},
		{args: []string{"workflow", "timeline", id, "--format=table", "--limit=10", "--offset=1"}},
		{args: []string{"workflow", "rewind", id, "0"}},
		{args: []string{"workflow", "fork", id}},
		{args: []string{"workflow", "export", id, "--output=" + export}},
		{args: []string{"workflow", "replay", export}},
		{args: []string{"workflow", "state-at", id, "0"}},
	} {
		r := run(t, on(dsn, c.args...)...)
		if c.want != "" && r.code == cli.ExitUsage {
			refused++
		}
		require.NotContains(t, r.stderr, "flag provided but not defined", r.String())
		require.NotContains(t, r.stderr, "unknown command", r.String())
		require.NotContains(t, r.stderr, "No help topic", r.String())
		if c.want != "" && r.code == cli.ExitUsage {
			require.Contains(t, r.stderr, c.want, r.String())
			continue
		}
		require.NotEqual(t, cli.ExitUsage, r.code, r.String())
	}
	require.Equal(t, 4, refused, "retry-buried, delete, schedule remove and webhook remove had rows to act on (no log row is 30 days old)")
}

// TestPluginTopLevelJobCommands: `queuety list|inspect|retry|bury` are
// the job commands under the plugin's names.
func TestPluginTopLevelJobCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	a, b := dispatch(t, dsn, "queuety.noop").ID, dispatch(t, dsn, "--queue", "emails", "queuety.noop").ID

	require.Equal(t, itoa(b)+" "+itoa(a)+"\n", runOK(t, on(dsn, "list", "--format", "ids")...).stdout)
	require.Equal(t, runOK(t, on(dsn, "job", "list")...).stdout, runOK(t, on(dsn, "list")...).stdout)
	require.Contains(t, runOK(t, on(dsn, "inspect", itoa(a))...).stdout, "Job #"+itoa(a))
	require.Equal(t, "Job #"+itoa(a)+" buried.\n", runOK(t, on(dsn, "bury", itoa(a))...).stdout)
	require.Equal(t, "buried", jobStatus(t, db, a))
	runOK(t, on(dsn, "retry", itoa(a))...)
	require.Equal(t, "pending", jobStatus(t, db, a))
	r := run(t, on(dsn, "delete", itoa(a))...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "pass --yes", r.String())
	runOK(t, on(dsn, "delete", itoa(a), "--yes")...)
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE id = ?", a))
	// Hidden from the help, which lists them under job.
	require.NotContains(t, runOK(t, "--help").stdout, "retry-buried")
}

func jobStatus(t *testing.T, db interface {
	Get(dest any, query string, args ...any) error
}, id int64) string {
	t.Helper()
	var s string
	require.NoError(t, db.Get(&s, "SELECT status FROM `"+jobsTable+"` WHERE id = ?", id))
	return s
}

// TestPluginFormats: --format prints the plugin's fields as wp-cli does
// (json, csv, yaml, ids, count) and refuses what wp-cli does not take;
// --json keeps the command's own JSON.
func TestPluginFormats(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	a := dispatch(t, dsn, "--priority", "2", "queuety.noop").ID
	dispatch(t, dsn, "queuety.noop")

	r := runOK(t, on(dsn, "list", "--format=json")...)
	var rows []map[string]any
	decodeJSON(t, r, &rows)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"attempts", "created_at", "handler", "id", "priority", "queue", "status"}, sortedKeys(rows[1]))
	require.Equal(t, json.Number(itoa(a)), rows[1]["id"])
	require.True(t, strings.HasPrefix(r.stdout, `[{"id":`), "the plugin's field order: %s", r.stdout)
	r = runOK(t, on(dsn, "job", "list", "--format", "csv")...)
	require.True(t, strings.HasPrefix(r.stdout, "id,queue,handler,status,attempts,priority,created_at\n"), r.stdout)
	require.Equal(t, 3, strings.Count(r.stdout, "\n"))
	r = runOK(t, on(dsn, "list", "--format", "yaml")...)
	require.True(t, strings.HasPrefix(r.stdout, "---\n- id: "), r.stdout)
	require.Contains(t, r.stdout, "  priority: 2\n")
	require.Equal(t, "2\n", runOK(t, on(dsn, "list", "--format", "count")...).stdout)

	id := dispatchWorkflow(t, dsn, workflow.New("fmt").Then("IncStep").Then("IncStep"), map[string]any{"n": 0})
	runWorkflows(t, dsn, id)
	r = runOK(t, on(dsn, "workflow", "list", "--format", "csv")...)
	require.Regexp(t, "^ID,Name,Version,Hash,Status,Step,StepName,WaitMode,Waiting\n"+itoa(id)+",fmt,-,[0-9a-f]{12},completed,2/2,-,-,-\n$", r.stdout)
	// timeline: 4 events; --offset 1 --limit 2 is the 2nd and 3rd.
	var all, page []map[string]any
	decodeJSON(t, runOK(t, on(dsn, "workflow", "timeline", itoa(id), "--format", "json")...), &all)
	require.Len(t, all, 4)
	require.Equal(t, []string{"Created_at", "Duration_ms", "Error", "Event", "Handler", "ID", "Step"}, sortedKeys(all[0]))
	decodeJSON(t, runOK(t, on(dsn, "workflow", "timeline", itoa(id), "--format", "json", "--offset", "1", "--limit", "2")...), &page)
	require.Equal(t, all[1:3], page)
	require.Equal(t, "0\n", runOK(t, on(dsn, "workflow", "timeline", itoa(id), "--format", "count", "--offset", "9")...).stdout)
	require.Equal(t, "[]\n", runOK(t, on(dsn, "webhook", "list", "--format", "json")...).stdout)
	require.Equal(t, "1\n", runOK(t, on(dsn, "metrics", "--format", "count")...).stdout, "IncStep's completions")
	require.Equal(t, "0\n", runOK(t, on(dsn, "log", "--format", "count", "--handler", "nope")...).stdout)

	for _, args := range [][]string{
		{"list", "--format", "xml"},
		{"metrics", "--format", "ids"},
		{"workflow", "artifacts", itoa(id), "--format", "ids"},
		{"workflow", "timeline", itoa(id), "--offset", "-1"},
		{"workflow", "artifacts", itoa(id), "--limit", "0"},
	} {
		r := run(t, on(dsn, args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "--", r.String())
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestWorkflowArtifactsLimit: --limit caps the listing, by key.
func TestWorkflowArtifactsLimit(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	id := dispatchWorkflow(t, dsn, workflow.New("arts").Then("IncStep"), map[string]any{"n": 0})
	for _, k := range []string{"b", "a", "c"} {
		exec1(t, db, "INSERT INTO `wp_queuety_artifacts` (workflow_id, artifact_key, kind, content) VALUES (?, ?, 'json', '1')", id, k)
	}
	r := runOK(t, on(dsn, "workflow", "artifacts", itoa(id), "--limit", "2", "--format", "csv")...)
	require.True(t, strings.HasPrefix(r.stdout, "Key,Kind,Step,UpdatedAt\na,json,-,"), r.stdout)
	require.Equal(t, 3, strings.Count(r.stdout, "\n"), r.stdout)
	require.Equal(t, "3\n", runOK(t, on(dsn, "workflow", "artifacts", itoa(id), "--format", "count")...).stdout)
}

// TestDispatchDelaySeconds: --delay takes the plugin's plain seconds (its
// own help example, --delay 60) as well as durations.
func TestDispatchDelaySeconds(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	delayOf := func(id int64) int {
		return count(t, db, "SELECT TIMESTAMPDIFF(SECOND, created_at, available_at) FROM `"+jobsTable+"` WHERE id = ?", id)
	}
	for _, args := range [][]string{{"--delay", "60"}, {"--delay=60"}, {"--delay", "1m"}} {
		d := dispatch(t, dsn, append(args, "queuety.noop")...)
		require.InDelta(t, 60, delayOf(d.ID), 1, "%v", args)
	}
	require.InDelta(t, 0, delayOf(dispatch(t, dsn, "--delay", "0", "queuety.noop").ID), 1)
	r := run(t, on(dsn, "dispatch", "queuety.noop", "--delay", "soon")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}

// TestStatusQueue: --queue shows that queue alone, zeros when it has no job.
func TestStatusQueue(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	dispatch(t, dsn, "--queue", "emails", "queuety.noop")
	dispatch(t, dsn, "--queue", "emails", "queuety.noop")
	dispatch(t, dsn, "queuety.noop")
	var stats []struct {
		Queue  string         `json:"queue"`
		Counts map[string]int `json:"counts"`
	}
	decodeJSON(t, runOK(t, on(dsn, "status", "--queue", "emails", "--json")...), &stats)
	require.Len(t, stats, 1)
	require.Equal(t, "emails", stats[0].Queue)
	require.Equal(t, 2, stats[0].Counts["pending"])
	stats = nil
	decodeJSON(t, runOK(t, on(dsn, "status", "--queue=none", "--json")...), &stats)
	require.Len(t, stats, 1)
	require.Equal(t, "none", stats[0].Queue)
	require.Zero(t, stats[0].Counts["pending"])
	r := runOK(t, on(dsn, "status", "--queue", "emails")...)
	require.Contains(t, r.stdout, "emails")
	require.NotContains(t, r.stdout, "default")
}

// TestWorkPluginPoolFlags: --workers and --max-workers set the jobs run
// at once (the start-up log says the concurrency), with --php the PHP
// processes; the plugin's refusals stay, and a pool given twice is refused.
func TestWorkPluginPoolFlags(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	r := runOK(t, on(dsn, "work", "--once", "--workers", "3")...)
	require.Contains(t, r.stderr, "concurrency=3", r.String())
	r = runOK(t, on(dsn, "work", "--once", "--min-workers", "2", "--max-workers", "5")...)
	require.Contains(t, r.stderr, "concurrency=5", r.String())
	for args, msg := range map[string][]string{
		"Use either --workers for a fixed pool or --min-workers/--max-workers": {"--workers", "2", "--max-workers", "4"},
		"--min-workers requires --max-workers.":                                {"--min-workers", "2"},
		"want 1 <= min <= max":                                                 {"--min-workers", "5", "--max-workers", "2"},
		"--concurrency and --workers/--max-workers both set the pool":          {"--workers", "2", "--concurrency", "8"},
		"--php-workers and --workers/--max-workers both set the pool":          {"--workers", "2", "--php", "php x.php", "--php-workers", "3"},
		"--workers 0: must be at least 1":                                      {"--workers", "0"},
	} {
		r := run(t, on(dsn, append([]string{"work", "--once"}, msg...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, args, r.String())
	}
}

// TestDiscover: discover lists the handler, step and job classes of a
// directory as the plugin's does (abstract and other classes skipped, the
// #[QueuetyHandler] name read), without WordPress and without a bootstrap,
// and with the bridge's classes loaded by --bootstrap.
func TestDiscover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("<?php\nnamespace "+src), 0o600))
	}
	write("SendEmail.php", `App\Jobs;
#[\Queuety\Attributes\QueuetyHandler('send_email')]
class SendEmail implements \Queuety\Handler { public function handle(array $payload): void {} public function config(): array { return []; } }`)
	write("Billing/Charge.php", `App\Jobs\Billing;
class Charge implements \Queuety\Step { public function handle(array $state): array { return []; } public function config(): array { return []; } }`)
	write("Export.php", `App\Jobs;
#[\Queuety\Attributes\QueuetyHandler(name: 'export')]
class Export implements \Queuety\Contracts\Job { public function handle(): void {} }`)
	write("Base.php", `App\Jobs;
abstract class Base implements \Queuety\Handler {}`)
	write("Util.php", `App\Jobs;
class Util {}`)
	write("notes.txt", "ignored")

	want := "class                    type     name\n" +
		`App\Jobs\Billing\Charge  step     (none)` + "\n" +
		`App\Jobs\Export          job      export` + "\n" +
		`App\Jobs\SendEmail       handler  send_email` + "\n"
	r := runOK(t, "discover", dir, `App\Jobs`)
	require.Equal(t, want+"Use --register to register discovered handlers.\n", r.stdout)
	r = runOK(t, "discover", dir, `App\Jobs\`, "--register", "--bootstrap", "../../php-bridge/autoload.php")
	require.Equal(t, want+"Registered 2 handlers.\n", r.stdout)
	var found []map[string]any
	decodeJSON(t, runOK(t, "discover", dir, `App\Jobs`, "--json"), &found)
	require.Len(t, found, 3)
	require.Equal(t, map[string]any{"class": `App\Jobs\SendEmail`, "type": "handler", "name": "send_email"}, found[2])

	require.Equal(t, "No handlers found.\n", runOK(t, "discover", filepath.Join(dir, "Billing"), `Other`).stdout)
	r = run(t, "discover", filepath.Join(dir, "nope"), `App\Jobs`)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "Directory not found: ", r.String())
	r = run(t, "discover", dir)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	r = run(t, "discover", dir, `App\Jobs`, "--php-binary", "/nonexistent/php")
	require.Equal(t, cli.ExitError, r.code, r.String())
}
