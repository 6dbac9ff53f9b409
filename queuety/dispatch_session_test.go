package queuety

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// TestDispatchInWorkerSession: a bound plain job gets the session columns
// (normalized options, PHP-encoded) and the session's queue unless a queue
// was given; bad options are refused before anything is written.
func TestDispatchInWorkerSession(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	row := func(id int64) [3]string {
		var r struct {
			Queue   string  `db:"queue"`
			Session *string `db:"session_id"`
			WS      *string `db:"worker_session"`
		}
		require.NoError(t, c.db.GetContext(ctx, &r, "SELECT queue, session_id, worker_session FROM `"+c.store.Tables()["jobs"]+"` WHERE id = ?", id))
		out := [3]string{r.Queue, "NULL", "NULL"}
		if r.Session != nil {
			out[1] = *r.Session
		}
		if r.WS != nil {
			out[2] = *r.WS
		}
		return out
	}
	gpu := workflow.WorkerSessionOptions{Queue: "gpu-activities", Requirements: []string{"gpu:nvidia-l4", "gpu:nvidia-l4"}, TTLSeconds: 600}
	const gpuJSON = `{"session_id":"gpu-render","connection":null,"queue":"gpu-activities","requirements":["gpu:nvidia-l4"],"lease_seconds":120,"ttl_seconds":600,"max_concurrent_activities":1,"create_if_missing":true,"allow_reacquire_after_failure":true}`

	d, err := c.Dispatch(ctx, "render", nil, InWorkerSession(" gpu-render ", gpu))
	require.NoError(t, err)
	require.Equal(t, [3]string{"gpu-activities", "gpu-render", gpuJSON}, row(d.ID))

	// Option order does not matter; an explicit queue wins.
	d, err = c.Dispatch(ctx, "render", nil, InWorkerSession("gpu-render", gpu), OnQueue("own"))
	require.NoError(t, err)
	require.Equal(t, [3]string{"own", "gpu-render", gpuJSON}, row(d.ID))

	// No session queue: the job's queue is recorded.
	d, err = c.Dispatch(ctx, "render", nil, OnQueue("bulk"), InWorkerSession("cpu", workflow.WorkerSessionOptions{MaxConcurrentActivities: 2, CreateIfMissing: new(false)}))
	require.NoError(t, err)
	require.Equal(t, [3]string{"bulk", "cpu",
		`{"session_id":"cpu","connection":null,"queue":"bulk","requirements":[],"lease_seconds":120,"ttl_seconds":1800,"max_concurrent_activities":2,"create_if_missing":false,"allow_reacquire_after_failure":true}`},
		row(d.ID))

	d, err = c.Dispatch(ctx, "plain", nil)
	require.NoError(t, err)
	require.Equal(t, [3]string{"default", "NULL", "NULL"}, row(d.ID))

	for msg, opt := range map[string]DispatchOption{
		"Worker session session id must be a non-empty string.":              InWorkerSession(" ", workflow.WorkerSessionOptions{}),
		"Worker session queue must be a non-empty string.":                   InWorkerSession("s", workflow.WorkerSessionOptions{Queue: " "}),
		"Worker session requirement at index 0 must be a non-empty string.":  InWorkerSession("s", workflow.WorkerSessionOptions{Requirements: []string{""}}),
		"Worker session leaseSeconds must be a positive integer.":            InWorkerSession("s", workflow.WorkerSessionOptions{LeaseSeconds: -1}),
		"Worker session maxConcurrentActivities must be a positive integer.": InWorkerSession("s", workflow.WorkerSessionOptions{MaxConcurrentActivities: -1}),
	} {
		_, err := c.Dispatch(ctx, "bad", nil, opt)
		require.EqualError(t, err, msg)
		require.EqualError(t, CheckDispatch("bad", opt), msg)
	}
	var n int
	require.NoError(t, c.db.GetContext(ctx, &n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE handler = 'bad'"))
	require.Zero(t, n)
}
