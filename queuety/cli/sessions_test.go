package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `work --http` registers the worker with its capabilities, serves the HTTP
// API beside it, runs a session-bound job dispatched from the CLI, and on
// SIGTERM closes its session and deregisters; `worker list` and `session
// list|show|close` show each state.
func TestWorkWithHTTPRunsSessionJobsAndClosesThemOnStop(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	runOK(t, on(dsn, "migrate")...)

	d := startListening(t, exec.Command(bin, "--dsn", dsn, "work", "--queue", "default,gpu-activities",
		"--worker-id", "gpu-1", "--capability", "gpu:nvidia-l4", "--capability", "fs:/mnt/models",
		"--http", "127.0.0.1:0", "--poll-interval", "20ms"),
		"QUEUETY_WORKER_TOKEN=wt-0123456789abcdef", "QUEUETY_OPERATOR_TOKEN=ot-0123456789abcdef")

	req, err := http.NewRequest("GET", "http://"+d.addr+"/api/cluster/info", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer ot-0123456789abcdef")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var info map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&info))
	res.Body.Close()
	verbs := info["worker_protocol"].(map[string]any)["server_capabilities"].(map[string]any)["worker_session_verbs"]
	require.Equal(t, []any{"create", "heartbeat", "close"}, verbs)

	var workers []map[string]any
	decodeJSON(t, runOK(t, on(dsn, "worker", "list", "--json")...), &workers)
	require.Len(t, workers, 1)
	require.Equal(t, "gpu-1", workers[0]["worker_id"])
	require.Equal(t, []any{"gpu:nvidia-l4", "fs:/mnt/models"}, workers[0]["capabilities"])
	require.Contains(t, runOK(t, on(dsn, "worker", "list")...).stdout, "gpu:nvidia-l4,fs:/mnt/models")

	job := dispatch(t, dsn, "--session-id", "gpu-render", "--session-queue", "gpu-activities",
		"--session-requirement", "gpu:nvidia-l4", "queuety.noop")
	db := openDB(t, dsn)
	waitFor(t, 20*time.Second, "session job completed", func() bool { return jobRow(t, db, job.ID).Status == "completed" })
	require.Equal(t, "gpu-1", jobRow(t, db, job.ID).ReservedBy.String)

	out := runOK(t, on(dsn, "session", "show", "gpu-render")...).stdout
	require.Contains(t, out, "status:")
	require.Contains(t, out, "active")
	require.Contains(t, out, "gpu-1")
	var list map[string]any
	decodeJSON(t, runOK(t, on(dsn, "session", "list", "--json")...), &list)
	require.Equal(t, "1", fmt.Sprint(list["metrics"].(map[string]any)["active"]))

	d.stop(t)
	var show map[string]any
	decodeJSON(t, runOK(t, on(dsn, "session", "show", "gpu-render", "--json")...), &show)
	require.Equal(t, "closed", show["status"], "a graceful stop closes the worker's sessions")
	require.Contains(t, runOK(t, on(dsn, "worker", "list")...).stdout, "No workers registered.")

	r := run(t, on(dsn, "session", "show", "nope")...)
	require.Equal(t, 3, r.code, r.String())
	require.Contains(t, r.stderr, "nope")
	r = run(t, on(dsn, "session", "close")...)
	require.Equal(t, 2, r.code, r.String())
	require.True(t, strings.Contains(r.stderr, "takes one session id"), r.String())
}

// `session close` closes a session as its owner would; close is terminal.
func TestSessionCloseCommand(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	runOK(t, on(dsn, "migrate")...)
	d := startListening(t, exec.Command(bin, "--dsn", dsn, "work", "--queue", "gpu-activities", "--worker-id", "gpu-1",
		"--capability", "gpu:nvidia-l4", "--http", "127.0.0.1:0", "--insecure-no-auth", "--poll-interval", "20ms"))
	job := dispatch(t, dsn, "--session-id", "s1", "--session-queue", "gpu-activities", "queuety.noop")
	db := openDB(t, dsn)
	waitFor(t, 20*time.Second, "session job completed", func() bool { return jobRow(t, db, job.ID).Status == "completed" })
	require.Equal(t, "Session s1 closed.\n", runOK(t, on(dsn, "session", "close", "s1")...).stdout)

	late := dispatch(t, dsn, "--session-id", "s1", "--session-queue", "gpu-activities", "queuety.noop")
	waitFor(t, 20*time.Second, "a job of the closed session is buried", func() bool { return jobRow(t, db, late.ID).Status == "buried" })
	require.Contains(t, jobRow(t, db, late.ID).ErrorMessage.String, "session_closed")
	d.stop(t)
}
