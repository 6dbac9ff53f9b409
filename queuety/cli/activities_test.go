package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
)

// `queuety activities` prints the activities.* counts; --json uses the
// metric names as keys.
func TestActivitiesCommand(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	runOK(t, on(dsn, "migrate")...)
	exec1(t, db, "INSERT INTO `"+jobsTable+"` (queue, handler, payload, status, workflow_id, step_index, available_at) VALUES ('default', 'Step', '[]', 'pending', 1, 0, NOW())")

	var m store.ActivityMetrics
	require.NoError(t, json.Unmarshal([]byte(runOK(t, on(dsn, "activities", "--json")...).stdout), &m))
	require.EqualValues(t, 0, m.Local)
	require.EqualValues(t, 1, m.QueuedOpen)
	require.EqualValues(t, 1, m.QueuedPending)

	out := runOK(t, on(dsn, "activities")...).stdout
	require.Contains(t, out, "activities.local ")
	require.Regexp(t, `activities\.queued_open\s+1\n`, out)
	require.Regexp(t, `activities\.local_attempts\s+0\n`, out)
}
