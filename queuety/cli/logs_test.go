package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// TestLogCommand: the filters of wp queuety log, text and JSON, bad
// flags named; log purge keeps live jobs' rows and needs --yes.
func TestLogCommand(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	ins := func(job any, handler, event, ago string) {
		exec1(t, db, "INSERT INTO `"+logsTable+"` (job_id, handler, queue, event, attempt, duration_ms, created_at) VALUES (?, ?, 'default', ?, 1, 3, UTC_TIMESTAMP() - INTERVAL "+ago+")", job, handler, event)
	}
	ins(1, "a", "started", "40 DAY")
	ins(1, "a", "completed", "40 DAY")
	ins(2, "b", "started", "1 HOUR")
	ins(2, "b", "buried", "1 HOUR")
	ins(3, "b", "completed", "1 MINUTE")

	ids := func(args ...string) []int64 {
		var rows []struct {
			ID int64 `json:"id"`
		}
		decodeJSON(t, runOK(t, on(dsn, append([]string{"log", "--json"}, args...)...)...), &rows)
		out := []int64{}
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	require.Equal(t, []int64{1, 2}, ids("--job", "1"))
	require.Equal(t, []int64{5, 4, 3}, ids("--handler", "b"))
	require.Equal(t, []int64{5}, ids("--handler", "b", "--limit", "1"))
	require.Equal(t, []int64{4}, ids("--event", "buried"))
	require.Equal(t, []int64{3, 4, 5}, ids(), "the last 24 hours")
	require.Equal(t, []int64{5}, ids("--since", "30m"))
	require.Equal(t, []int64{5}, ids("--handler", "b", "--event", "completed"))

	var full []map[string]any
	decodeJSON(t, runOK(t, on(dsn, "log", "--json", "--event", "buried")...), &full)
	require.Equal(t, json.Number("2"), full[0]["job_id"])
	require.Equal(t, "b", full[0]["handler"])
	require.Nil(t, full[0]["workflow_id"])
	require.Regexp(t, `(?m)^ID\s+EVENT\s+HANDLER\s+JOB\s+WORKFLOW\s+STEP\s+ATTEMPT\s+DURATION_MS\s+CREATED\n4\s+buried\s+b\s+2\s+-\s+-\s+1\s+3\s+\d{4}-`,
		runOK(t, on(dsn, "log", "--event", "buried")...).stdout)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "--event", "done"}, `--event "done": want one of started, completed`},
		{[]string{"log", "--since", "soon"}, `--since "soon": want a time`},
		{[]string{"log", "--limit", "0"}, "--limit 0: must be at least 1"},
		{[]string{"log", "--job", "0"}, "--job 0: not a job id"},
		{[]string{"log", "purge"}, "--older-than <days> is required"},
		{[]string{"log", "purge", "--older-than", "30"}, "log purge would delete 2 log entries older than 30 days: pass --yes"},
	} {
		r := run(t, on(dsn, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
	}

	// Jobs 1 and 2 have no row left: their old rows go; a pending job's
	// old rows stay.
	exec1(t, db, "INSERT INTO `"+jobsTable+"` (id, queue, handler, payload, status) VALUES (3, 'default', 'b', '{}', 'pending')")
	ins(3, "b", "started", "40 DAY")
	require.Equal(t, "Would purge 2 log entries older than 30 days.\n", runOK(t, on(dsn, "log", "purge", "--older-than", "30", "--dry-run")...).stdout)
	var preview map[string]any
	decodeJSON(t, runOK(t, on(dsn, "log", "purge", "--older-than", "30", "--dry-run", "--json")...), &preview)
	require.Equal(t, map[string]any{"dry_run": true, "would_purge": json.Number("2")}, preview)
	require.Equal(t, "Purged 2 log entries older than 30 days.\n", runOK(t, on(dsn, "log", "purge", "--older-than", "30", "--yes")...).stdout)
	require.Equal(t, 4, count(t, db, "SELECT COUNT(*) FROM `"+logsTable+"`"))
}

// TestMetricsCommand: Metrics::handler_stats in text and JSON.
func TestMetricsCommand(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	require.Equal(t, "No metrics data found for the last 60 minutes.\n", runOK(t, on(dsn, "metrics")...).stdout)
	require.Equal(t, "[]\n", runOK(t, on(dsn, "metrics", "--json")...).stdout)
	for _, r := range []struct {
		event string
		ms    int
	}{{"completed", 10}, {"completed", 21}, {"failed", 1}, {"retried", 0}} {
		exec1(t, db, "INSERT INTO `"+logsTable+"` (job_id, handler, queue, event, duration_ms) VALUES (1, 'send_email', 'default', ?, ?)", r.event, r.ms)
	}
	var stats []map[string]any
	decodeJSON(t, runOK(t, on(dsn, "metrics", "--json", "--minutes", "5")...), &stats)
	require.Equal(t, []map[string]any{{"handler": "send_email", "completed": json.Number("2"), "failed": json.Number("1"),
		"avg_ms": json.Number("15.5"), "p95_ms": json.Number("21"), "error_rate": json.Number("0.3333")}}, stats)
	require.Regexp(t, `(?m)^HANDLER\s+COMPLETED\s+FAILED\s+AVG_MS\s+P95_MS\s+ERROR_RATE\nsend_email\s+2\s+1\s+15\.5\s+21\s+0\.3333\s*$`,
		runOK(t, on(dsn, "metrics")...).stdout)
	r := run(t, on(dsn, "metrics", "--minutes", "-1")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
}
