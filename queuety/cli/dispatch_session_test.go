package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// TestDispatchSessionFlags: --session-* bind the job to a worker session;
// bad values are usage errors with the library's messages and insert
// nothing.
func TestDispatchSessionFlags(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	sessionRow := func(id int64) [3]string {
		var r struct {
			Queue   string  `db:"queue"`
			Session *string `db:"session_id"`
			WS      *string `db:"worker_session"`
		}
		require.NoError(t, db.Get(&r, "SELECT queue, session_id, worker_session FROM `"+jobsTable+"` WHERE id = ?", id))
		require.NotNil(t, r.Session)
		require.NotNil(t, r.WS)
		return [3]string{r.Queue, *r.Session, *r.WS}
	}

	d := dispatch(t, dsn, "--session-id", "gpu-render", "--session-queue", "gpu-activities",
		"--session-requirement", "gpu:nvidia-l4", "--session-requirement", "fs:/mnt/models",
		"--session-lease", "60", "--session-ttl", "600", "render")
	require.Equal(t, [3]string{"gpu-activities", "gpu-render",
		`{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4","fs:\/mnt\/models"],"lease_seconds":60,"ttl_seconds":600,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`},
		sessionRow(d.ID))

	d = dispatch(t, dsn, "--queue", "own", "--session-id", "s", "render")
	require.Equal(t, [3]string{"own", "s",
		`{"session_id":"s","connection":null,"queue":"own","requirements":[],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`},
		sessionRow(d.ID))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"blank id", []string{"--session-id", " "}, "--session-id: Worker session session id must be a non-empty string."},
		{"blank queue", []string{"--session-id", "s", "--session-queue", " "}, "--session-id: Worker session queue must be a non-empty string."},
		{"empty queue", []string{"--session-id", "s", "--session-queue", ""}, "--session-queue: Worker session queue must be a non-empty string."},
		{"blank requirement", []string{"--session-id", "s", "--session-requirement", " "}, "--session-id: Worker session requirement at index 0 must be a non-empty string."},
		{"zero lease", []string{"--session-id", "s", "--session-lease", "0"}, "--session-lease: Worker session leaseSeconds must be a positive integer."},
		{"negative ttl", []string{"--session-id", "s", "--session-ttl", "-5"}, "--session-id: Worker session ttlSeconds must be a positive integer."},
		{"zero ttl", []string{"--session-id", "s", "--session-ttl", "0"}, "--session-ttl: Worker session ttlSeconds must be a positive integer."},
		{"options without id", []string{"--session-queue", "q"}, "--session-queue needs --session-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, on(dsn, append(append([]string{"dispatch"}, tc.args...), "bad")...)...)
			require.Equal(t, cli.ExitUsage, r.code, r.String())
			require.Contains(t, r.stderr, tc.want, r.String())
		})
	}
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE handler = 'bad'"))
}
