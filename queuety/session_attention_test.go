package queuety

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/sessions"
)

// Pending session-bound jobs are checked against the live registrations
// as the session claim would: one whose requirements a worker on its queue
// covers is left out; one no worker covers, and one whose worker_session
// cannot be read, are grouped by session with the reason.
func TestUnadmittedSessionJobs(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	_, err := c.sessions.Register(ctx, sessions.Registration{WorkerID: "gpu-1", Queues: []string{"gpu-activities"}, Capabilities: []string{"gpu:nvidia-l4"}})
	require.NoError(t, err)
	insertSessionJob(t, c, "render", `[]`, gpuRender(nil)) // gpu-1 admits it
	h100 := func(o *sessions.Options) { o.SessionID, o.Requirements = "big-render", []string{"gpu:h100"} }
	first := insertSessionJob(t, c, "render", `[]`, gpuRender(h100))
	insertSessionJob(t, c, "render", `[]`, gpuRender(h100))
	bad := insertSessionJob(t, c, "render", `[]`, gpuRender(func(o *sessions.Options) { o.SessionID = "broken" }))
	execSQL(t, c, "UPDATE {jobs} SET worker_session = 'not json' WHERE id = ?", bad)

	workers, err := c.sessions.Workers(ctx, "")
	require.NoError(t, err)
	got, err := c.UnadmittedSessionJobs(ctx, workers, 100)
	require.NoError(t, err)
	require.Len(t, got, 2, "%+v", got)
	require.Equal(t, UnadmittedSessionJobs{SessionID: "big-render", Queue: "gpu-activities", Requirements: []string{"gpu:h100"},
		Reason: "no live worker serves its queue with these capabilities", Count: 2, FirstID: first}, got[0])
	require.Equal(t, "broken", got[1].SessionID)
	require.Contains(t, got[1].Reason, "cannot be read")

	// Without any live worker, the admissible job is listed too.
	got, err = c.UnadmittedSessionJobs(ctx, nil, 100)
	require.NoError(t, err)
	require.Len(t, got, 3)
}
