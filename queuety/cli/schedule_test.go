package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)

	r := runOK(t, on(dsn, "schedule", "add", "record", "--every", "10 minutes", "--payload", `{"source":"interval"}`)...)
	require.Equal(t, "Schedule #1 added for handler 'record'.\n", r.stdout)
	r = runOK(t, on(dsn, "schedule", "add", "report", "--cron", "0 9 1 * 1", "--queue", "critical", "--overlap", "skip", "--json")...)
	var added struct {
		ID      int64  `json:"id"`
		Handler string `json:"handler"`
		NextRun string `json:"next_run"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &added), r.stdout)
	require.Equal(t, int64(2), added.ID)
	next, err := time.Parse(time.DateTime, added.NextRun)
	require.NoError(t, err)
	require.Equal(t, 1, next.Day(), "day 1 and Monday")
	require.Equal(t, time.Monday, next.Weekday())
	runOK(t, on(dsn, "schedule", "add", "plain", "--every", "1 hour")...)

	var rows []struct {
		Handler, Payload, Queue, Expression, ExpressionType, OverlapPolicy string
	}
	require.NoError(t, db.Select(&rows, "SELECT handler AS handler, payload, queue, expression, expression_type AS expressiontype, overlap_policy AS overlappolicy FROM wp_queuety_schedules ORDER BY id"))
	require.Equal(t, `{"source":"interval"}`, rows[0].Payload)
	require.Equal(t, []string{"critical", "cron", "skip"}, []string{rows[1].Queue, rows[1].ExpressionType, rows[1].OverlapPolicy})
	require.Equal(t, "[]", rows[2].Payload, "the default {} is stored as PHP's json_encode writes an empty array")

	// list: the plugin's columns and --format=json keys.
	r = runOK(t, on(dsn, "schedule", "list")...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, []string{"ID", "Handler", "Expression", "Type", "Queue", "Enabled", "Last", "Run", "Next", "Run"}, strings.Fields(lines[0]))
	require.Contains(t, lines[1], "record")
	require.Contains(t, lines[1], "—", "never ran")
	r = runOK(t, on(dsn, "schedule", "list", "--json")...)
	var items []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &items), r.stdout)
	require.Len(t, items, 3)
	require.Equal(t, float64(1), items[0]["ID"])
	require.Equal(t, "10 minutes", items[0]["Expression"])
	require.Equal(t, "interval", items[0]["Type"])
	require.Equal(t, "yes", items[0]["Enabled"])
	require.Equal(t, "—", items[0]["Last Run"])
	require.Len(t, items[0], 8)
	r = runOK(t, on(dsn, "schedule", "list", "--format", "csv")...)
	require.True(t, strings.HasPrefix(r.stdout, "ID,Handler,Expression,Type,Queue,Enabled,Last Run,Next Run\n"), r.stdout)

	// run: nothing due, then the interval row moved into the past.
	r = runOK(t, on(dsn, "schedule", "run")...)
	require.Equal(t, "Scheduler tick complete. Enqueued 0 jobs.\n", r.stdout)
	_, err = db.Exec("UPDATE wp_queuety_schedules SET next_run = ? WHERE handler = 'record'", store.DateTime(time.Now().Add(-time.Hour)))
	require.NoError(t, err)
	r = runOK(t, on(dsn, "schedule", "run", "--dry-run", "--json")...)
	require.JSONEq(t, `{"dry_run":true,"due":["record"]}`, r.stdout)
	r = runOK(t, on(dsn, "schedule", "run", "--json")...)
	require.JSONEq(t, `{"enqueued":1,"skipped":0,"waiting":0,"unreadable":[]}`, r.stdout)
	var job store.JobRow
	require.NoError(t, db.Get(&job, "SELECT id, queue, handler, payload, priority, status, max_attempts, cost_units, available_at, created_at FROM wp_queuety_jobs"))
	require.Equal(t, []any{"default", "record", `{"source":"interval"}`, 0, "pending", 3, int64(1)},
		[]any{job.Queue, job.Handler, job.Payload, job.Priority, job.Status, job.MaxAttempts, job.CostUnits})
	r = runOK(t, on(dsn, "schedule", "run")...)
	require.Equal(t, "Scheduler tick complete. Enqueued 0 jobs.\n", r.stdout, "the run is done; next_run counts from the tick")
	var logs int
	require.NoError(t, db.Get(&logs, "SELECT COUNT(*) FROM wp_queuety_logs"))
	require.Zero(t, logs, "ticks write no log rows")

	// remove: confirmation, dry run, not found.
	r = run(t, on(dsn, "schedule", "remove", "record")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--yes")
	r = runOK(t, on(dsn, "schedule", "remove", "record", "--dry-run")...)
	require.Contains(t, r.stdout, "Would remove schedule #1 for handler 'record' (every 10 minutes")
	r = runOK(t, on(dsn, "schedule", "remove", "record", "--yes")...)
	require.Equal(t, "Schedule for handler 'record' removed.\n", r.stdout)
	r = run(t, on(dsn, "schedule", "remove", "record", "--yes")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	require.Contains(t, r.stderr, "no schedule found for handler 'record'")
	var n int
	require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM wp_queuety_schedules"))
	require.Equal(t, 2, n)
	require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM wp_queuety_jobs"))
	require.Equal(t, 1, n, "removing a schedule keeps its jobs")
}

func TestScheduleCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"schedule", "add", "x"}, "You must specify either --every or --cron."},
		{[]string{"schedule", "add", "x", "--every", "1 hour", "--cron", "* * * * *"}, "--every and --cron together"},
		{[]string{"schedule", "add", "x", "--every", "every hour"}, "whole number"},
		{[]string{"schedule", "add", "x", "--cron", "0 9 * * MON"}, "only numbers"},
		{[]string{"schedule", "add", "x", "--cron", "0 9 * *"}, "want 5 fields"},
		{[]string{"schedule", "add", "x", "--every", "1 hour", "--payload", "{bad"}, "--payload"},
		{[]string{"schedule", "add", "x", "--every", "1 hour", "--overlap", "never"}, "want allow, skip or buffer"},
		{[]string{"schedule", "add"}, "want one <handler>"},
		{[]string{"schedule", "remove"}, "want one <handler>"},
		{[]string{"schedule", "remove", "x", "--yes", "--dry-run"}, "choose one"},
		{[]string{"schedule", "run", "x"}, "run takes no arguments"},
		{[]string{"schedule", "list", "--format", "xml"}, "--format \"xml\""},
		{[]string{"work", "--schedule-interval", "1ns"}, "--schedule-interval"},
	} {
		r := run(t, on(dsn, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, c.msg, r.String())
	}
	runOK(t, on(dsn, "schedule", "add", "x", "--every", "1 hour")...)
	r := run(t, on(dsn, "schedule", "add", "x", "--every", "2 hours")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "a schedule for this handler exists")
}
