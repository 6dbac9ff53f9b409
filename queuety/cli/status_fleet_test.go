package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// status lists the pending jobs no live queuety worker runs, by queue and
// handler, and whether a PHP worker ran a job on the queue lately.
func TestStatusListsUnclaimedJobs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	runOK(t, on(dsn, "dispatch", "App\\Jobs\\Export")...)
	runOK(t, on(dsn, "dispatch", "App\\Jobs\\Export")...)
	runOK(t, on(dsn, "dispatch", "go_mail", "--queue", "go")...)
	exec1(t, db, "INSERT INTO "+jobsTable+" (queue, handler, payload, status, attempts, reserved_at, completed_at) VALUES ('default', 'App\\\\Jobs\\\\Export', '{}', 'completed', 1, NOW(), NOW())")

	r := runOK(t, on(dsn, "status")...)
	require.Contains(t, r.stdout, "No live queuety worker runs 3 pending jobs (PHP workers do not register; PHP SEEN: one ran a job on the queue in the last 15m0s):")
	require.Regexp(t, `(?m)^  default\s+App\\Jobs\\Export\s+job\s+2\s+yes$`, r.stdout)
	require.Regexp(t, `(?m)^  go\s+go_mail\s+job\s+1\s+no$`, r.stdout)

	r = runOK(t, on(dsn, "status", "--json")...)
	var stats []struct {
		Queue     string           `json:"queue"`
		Unclaimed []map[string]any `json:"unclaimed"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &stats), r.stdout)
	byQueue := map[string][]map[string]any{}
	for _, s := range stats {
		byQueue[s.Queue] = s.Unclaimed
	}
	require.Equal(t, []map[string]any{{"handler": "App\\Jobs\\Export", "kind": "job", "jobs": 2.0, "php_seen": true}}, byQueue["default"])
	require.Equal(t, []map[string]any{{"handler": "go_mail", "kind": "job", "jobs": 1.0, "php_seen": false}}, byQueue["go"])
}
