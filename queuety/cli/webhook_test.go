package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// TestWebhookCommands: add (checked), list in text and JSON, remove with
// --dry-run and --yes, a missing id exits 3, bad input exits 2.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	require.Equal(t, "No webhooks registered.\n", runOK(t, on(dsn, "webhook", "list")...).stdout)
	require.Equal(t, "[]\n", runOK(t, on(dsn, "webhook", "list", "--json")...).stdout)

	require.Equal(t, "Webhook #1 registered for event 'job.buried'.\n",
		runOK(t, on(dsn, "webhook", "add", "job.buried", "https://ops.example.com/h")...).stdout)
	var added map[string]any
	decodeJSON(t, runOK(t, on(dsn, "webhook", "add", "--json", "workflow.failed", "http://127.0.0.1:9/w")...), &added)
	require.Equal(t, map[string]any{"id": json.Number("2"), "event": "workflow.failed", "url": "http://127.0.0.1:9/w"}, added)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"webhook", "add", "job.done", "http://x/"}, `webhook event "job.done": want one of job.completed, job.failed, job.buried, workflow.failed`},
		{[]string{"webhook", "add", "job.failed", "ftp://x/"}, "want http or https"},
		{[]string{"webhook", "add", "job.failed"}, "takes an event and a URL"},
		{[]string{"webhook", "remove", "x"}, `"x" is not a webhook id`},
		{[]string{"webhook", "remove", "1"}, "pass --yes"},
		{[]string{"webhook", "remove", "--yes", "--dry-run", "1"}, "--yes and --dry-run together"},
	} {
		r := run(t, on(dsn, tc.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
	}

	var list []map[string]any
	decodeJSON(t, runOK(t, on(dsn, "webhook", "list", "--json")...), &list)
	require.Len(t, list, 2)
	require.Equal(t, "job.buried", list[0]["event"])
	require.Equal(t, "https://ops.example.com/h", list[0]["url"])
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, list[0]["created_at"])
	require.Regexp(t, `(?m)^ID\s+EVENT\s+URL\s+CREATED\n1\s+job\.buried\s+https://ops\.example\.com/h\s+`, runOK(t, on(dsn, "webhook", "list")...).stdout)

	require.Equal(t, "Would remove webhook #1 (job.buried → https://ops.example.com/h).\n",
		runOK(t, on(dsn, "webhook", "remove", "--dry-run", "1")...).stdout)
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_webhooks`"))
	require.Equal(t, "Webhook #1 removed.\n", runOK(t, on(dsn, "webhook", "remove", "--yes", "1")...).stdout)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `wp_queuety_webhooks`"))
	r := run(t, on(dsn, "webhook", "remove", "--yes", "1")...)
	require.Equal(t, cli.ExitNotFound, r.code, r.String())
	require.Contains(t, r.stderr, "webhook #1: webhook not found")
}
