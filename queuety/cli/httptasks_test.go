package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// planeServer runs the real HTTP server over a migrated database with the
// job runtime behind its task routes.
func planeServer(t *testing.T) (*queuety.Client, string) {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: testdb.New(t), RescueSchedule: "off"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(ctx)
	require.NoError(t, err)
	srv, err := httpapi.New(httpapi.Config{
		Listen: "127.0.0.1:0", WorkerToken: "w-token-0123456789", OperatorToken: "o-token-0123456789",
		Registry: sessionRegistry(c), Tasks: httpTasks{c.Tasks()}, PollTimeout: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return c, "http://" + srv.Addr()
}

// call sends a worker-plane request and decodes the JSON answer.
func call(t *testing.T, base, method, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer w-token-0123456789")
	req.Header.Set("X-Durable-Workflow-Protocol-Version", "1.13")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// An external worker over HTTP: it registers with a capability, polls a
// session-bound job (the session is created for it), heartbeats and
// completes it; a worker without the capability polls nothing; the
// killed-attempt's late completion is refused with 409 and changes nothing.
func TestExternalWorkerRunsASessionJobOverHTTP(t *testing.T) {
	t.Parallel()
	c, base := planeServer(t)
	ctx := context.Background()
	q := "gpu-activities"
	opts := sessions.Options{SessionID: "gpu-render", Queue: &q, Requirements: []string{"gpu:nvidia-l4"}}
	snap, err := phpjson.Encode(opts.Normalize().Snapshot())
	require.NoError(t, err)
	id, _, err := clientstore.Of(c).InsertJob(ctx, store.InsertJob{Queue: q, Handler: "media.render-frames", Payload: []byte(`{"video":42}`),
		MaxAttempts: 3, SessionID: "gpu-render", WorkerSession: snap})
	require.NoError(t, err)

	for _, w := range []struct {
		id   string
		caps []string
	}{{"cpu-worker", nil}, {"gpu-worker-1", []string{"gpu:nvidia-l4"}}} {
		status, body := call(t, base, "POST", "/api/worker/register", map[string]any{
			"worker_id": w.id, "task_queue": q, "runtime": "python", "capabilities": w.caps,
		})
		require.Equal(t, http.StatusCreated, status, "%v", body)
	}

	status, body := call(t, base, "POST", "/api/worker/activity-tasks/poll", map[string]any{"worker_id": "cpu-worker", "task_queue": q})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "empty", body["poll_status"], "a worker without the capability gets nothing")
	_, err = sessionRegistry(c).Get(ctx, "default", "gpu-render")
	require.ErrorIs(t, err, sessions.ErrSessionNotFound, "and no session row is created")

	status, body = call(t, base, "POST", "/api/worker/activity-tasks/poll", map[string]any{"worker_id": "gpu-worker-1", "task_queue": q})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "leased", body["poll_status"], "%v", body)
	task := body["task"].(map[string]any)
	require.Equal(t, q, task["task_queue"])
	require.Equal(t, map[string]any{"video": float64(42)}, task["payload"])
	ws := task["worker_session"].(map[string]any)
	require.Equal(t, "gpu-render", ws["session_id"])
	require.Equal(t, "gpu-worker-1", ws["lease_owner"])
	attemptID := task["activity_attempt_id"].(string)
	taskPath := "/api/worker/activity-tasks/" + task["task_id"].(string)

	s, err := sessionRegistry(c).Get(ctx, "default", "gpu-render")
	require.NoError(t, err)
	require.Equal(t, "active", s.Status)
	require.Equal(t, 1, s.ActiveActivityCount)

	status, body = call(t, base, "POST", taskPath+"/heartbeat", map[string]any{
		"activity_attempt_id": attemptID, "lease_owner": "gpu-worker-1", "message": "rendering", "current": 10, "total": 100,
	})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, true, body["can_continue"])
	row, err := clientstore.Of(c).GetJob(ctx, id)
	require.NoError(t, err)
	require.Contains(t, row.HeartbeatData.String, "rendering")

	// A completion from a worker that does not hold the attempt is fenced.
	status, body = call(t, base, "POST", taskPath+"/complete", map[string]any{"activity_attempt_id": attemptID, "lease_owner": "cpu-worker"})
	require.Equal(t, http.StatusConflict, status, "%v", body)
	require.Equal(t, "stale_attempt", body["reason"])

	status, body = call(t, base, "POST", taskPath+"/complete", map[string]any{"activity_attempt_id": attemptID, "lease_owner": "gpu-worker-1", "result": map[string]any{"frames": 100}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	row, err = clientstore.Of(c).GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.StatusCompleted, row.Status)
	logs, err := clientstore.Of(c).JobLogs(ctx, id)
	require.NoError(t, err)
	var events []string
	for _, l := range logs {
		events = append(events, l.Event)
	}
	require.Equal(t, []string{store.EventStarted, store.EventCompleted}, events)

	// A repeated completion changes nothing either.
	status, _ = call(t, base, "POST", taskPath+"/complete", map[string]any{"activity_attempt_id": attemptID, "lease_owner": "cpu-worker"})
	require.Equal(t, http.StatusConflict, status)
}

// registerExt1 registers the external worker ext-1 on the default queue
// and returns a poll that waits for its next task.
func registerExt1(t *testing.T, base string) func() map[string]any {
	t.Helper()
	status, body := call(t, base, "POST", "/api/worker/register", map[string]any{"worker_id": "ext-1", "task_queue": "default", "runtime": "go"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	return func() map[string]any {
		t.Helper()
		var task map[string]any
		require.Eventually(t, func() bool {
			_, body := call(t, base, "POST", "/api/worker/activity-tasks/poll", map[string]any{"worker_id": "ext-1"})
			task, _ = body["task"].(map[string]any)
			return task != nil
		}, 10*time.Second, 50*time.Millisecond)
		return task
	}
}

// A failure over HTTP retries the job with Queuety's log rows while
// attempts remain, and buries it when the worker says non-retryable.
func TestExternalWorkerFailuresRetryThenBury(t *testing.T) {
	t.Parallel()
	c, base := planeServer(t)
	ctx := context.Background()
	id, _, err := clientstore.Of(c).InsertJob(ctx, store.InsertJob{Queue: "default", Handler: "mail.send", Payload: []byte(`[]`), MaxAttempts: 3})
	require.NoError(t, err)
	poll := registerExt1(t, base)
	task := poll()
	status, body := call(t, base, "POST", "/api/worker/activity-tasks/"+task["task_id"].(string)+"/fail", map[string]any{
		"activity_attempt_id": task["activity_attempt_id"], "lease_owner": "ext-1", "message": "SMTP down", "exception_type": "SmtpException",
	})
	require.Equal(t, http.StatusOK, status, "%v", body)
	row, err := clientstore.Of(c).GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.StatusPending, row.Status, "retried")

	_, err = clientstore.Of(c).DB().Exec("UPDATE "+clientstore.Of(c).Tables()["jobs"]+" SET available_at = NOW() WHERE id = ?", id)
	require.NoError(t, err)
	task = poll()
	require.EqualValues(t, 2, task["attempt"])
	status, body = call(t, base, "POST", "/api/worker/activity-tasks/"+task["task_id"].(string)+"/fail", map[string]any{
		"activity_attempt_id": task["activity_attempt_id"], "lease_owner": "ext-1", "message": "bad address", "non_retryable": true,
	})
	require.Equal(t, http.StatusOK, status, "%v", body)
	row, err = clientstore.Of(c).GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.StatusBuried, row.Status)
	require.Equal(t, "bad address", row.ErrorMessage.String)
}

// An external worker's failure with a message far over the column's 64 KiB
// is recorded cut to fit (it used to answer 500 and leave the job
// processing).
func TestExternalWorkerHugeFailureMessageFits(t *testing.T) {
	t.Parallel()
	c, base := planeServer(t)
	ctx := context.Background()
	id, _, err := clientstore.Of(c).InsertJob(ctx, store.InsertJob{Queue: "default", Handler: "mail.send", Payload: []byte(`[]`), MaxAttempts: 3})
	require.NoError(t, err)
	task := registerExt1(t, base)()
	huge := strings.Repeat("ü", 50_000) // 100 KB
	status, body := call(t, base, "POST", "/api/worker/activity-tasks/"+task["task_id"].(string)+"/fail", map[string]any{
		"activity_attempt_id": task["activity_attempt_id"], "lease_owner": "ext-1", "message": huge, "non_retryable": true,
	})
	require.Equal(t, http.StatusOK, status, "%v", body)
	row, err := clientstore.Of(c).GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.StatusBuried, row.Status)
	require.LessOrEqual(t, len(row.ErrorMessage.String), store.TextBytes)
	require.True(t, strings.HasSuffix(row.ErrorMessage.String, "…"))
	require.True(t, strings.HasPrefix(huge, strings.TrimSuffix(row.ErrorMessage.String, "…")))
}
