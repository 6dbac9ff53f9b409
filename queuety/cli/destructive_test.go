package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

// purge, job retry-buried and job delete say what they would touch, do it
// only with --yes, and preview with --dry-run; without --yes (stdin is not
// a terminal here) they exit 2 naming --yes and change nothing.
func TestDestructiveCommandsNeedYes(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	done := dispatch(t, dsn, "--payload", `{"n":1}`, "hx").ID
	buried := dispatch(t, dsn, "--queue", "mail", "--payload", `{"n":2}`, "hx").ID
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'completed', completed_at = NOW() - INTERVAL 10 DAY WHERE id = ?", done)
	runOK(t, on(dsn, "job", "bury", itoa(buried))...)
	rows := func() int { return count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"`") }

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"purge"}, "purge would delete 1 completed jobs older than 7 days: pass --yes"},
		{[]string{"purge", "--json"}, "pass --yes"},
		{[]string{"job", "retry-buried", "--queue", "mail"}, `job retry-buried would retry 1 buried jobs in queue "mail": pass --yes`},
		{[]string{"job", "delete", itoa(done)}, "job delete would delete job #1 hx (completed) in queue default, attempts 0/3, created "},
		{[]string{"job", "delete", "--yes", "--dry-run", itoa(done)}, "--yes and --dry-run together"},
	} {
		r := run(t, on(dsn, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
		require.Empty(t, r.stdout)
	}
	require.Equal(t, 2, rows())
	require.Equal(t, store.StatusBuried, jobRow(t, db, buried).Status)

	// --dry-run previews, in text and JSON.
	require.Equal(t, "Would purge 1 completed jobs older than 7 days.\n", runOK(t, on(dsn, "purge", "--dry-run")...).stdout)
	var preview map[string]any
	decodeJSON(t, runOK(t, on(dsn, "purge", "--dry-run", "--json")...), &preview)
	require.Equal(t, map[string]any{"dry_run": true, "would_purge": json.Number("1"), "kinds": map[string]any{"completed": json.Number("1")}}, preview)
	preview = nil
	decodeJSON(t, runOK(t, on(dsn, "job", "retry-buried", "--dry-run", "--json")...), &preview)
	require.Equal(t, map[string]any{"dry_run": true, "would_retry": json.Number("1")}, preview)
	require.Regexp(t, `^Would delete job #1 hx \(completed\) in queue default, attempts 0/3, created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\n$`,
		runOK(t, on(dsn, "job", "delete", "--dry-run", itoa(done))...).stdout)
	require.Equal(t, 2, rows(), "--dry-run changes nothing")
	require.Equal(t, store.StatusBuried, jobRow(t, db, buried).Status)

	// Nothing to touch: no --yes needed, nothing done.
	require.Equal(t, "Purged 0 completed jobs.\n", runOK(t, on(dsn, "purge", "--older-than", "30")...).stdout)
	r := run(t, on(dsn, "job", "delete", "--dry-run", "999")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())

	// -y / --yes goes ahead.
	require.Equal(t, "Retried 1 buried jobs.\n", runOK(t, on(dsn, "job", "retry-buried", "-y")...).stdout)
	require.Equal(t, "Job #1 deleted.\n", runOK(t, on(dsn, "job", "delete", "--yes", itoa(done))...).stdout)
	require.Equal(t, 1, rows())
}
