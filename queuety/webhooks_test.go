package queuety

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// hookListener is a local HTTP endpoint that keeps the raw bytes of every
// request it gets. While hold is set it accepts and reads requests but
// answers none until release.
type hookListener struct {
	ln   net.Listener
	mu   sync.Mutex
	got  [][]byte
	hold chan struct{} // nil: answer at once
	// status is the answer's status code (default 200).
	status int
	// failFirst requests are answered 500 before status applies.
	failFirst int
}

func newHookListener(t *testing.T) *hookListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &hookListener{ln: ln, status: 200}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go h.serve(conn)
		}
	}()
	return h
}

func (h *hookListener) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	var raw bytes.Buffer
	length := 0
	for {
		line, err := r.ReadString('\n')
		raw.WriteString(line)
		if err != nil {
			return
		}
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ": "); ok && strings.EqualFold(k, "Content-Length") {
			length, _ = strconv.Atoi(v)
		}
		if line == "\r\n" {
			break
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return
	}
	raw.Write(body)
	h.mu.Lock()
	h.got = append(h.got, raw.Bytes())
	hold, status := h.hold, h.status
	if h.failFirst > 0 {
		h.failFirst--
		status = 500
	}
	h.mu.Unlock()
	if hold != nil {
		<-hold
	}
	fmt.Fprintf(conn, "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status)
}

func (h *hookListener) port() string { return strconv.Itoa(h.ln.Addr().(*net.TCPAddr).Port) }

func (h *hookListener) requests() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.got...)
}

func (h *hookListener) waitFor(t *testing.T, n int) [][]byte {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.requests()) >= n }, 10*time.Second, time.Millisecond, "want %d webhook requests", n)
	return h.requests()
}

type recordedRequest struct {
	Snapshot int         `json:"snapshot"`
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Version  string      `json:"version"`
	Headers  [][2]string `json:"headers"`
	Body     string      `json:"body"`
}

// raw is the request's bytes as the listener got them, with the port of
// the recording replaced.
func (r recordedRequest) raw(port string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", r.Method, r.Path, r.Version)
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], strings.Replace(h[1], ":18765", ":"+port, 1))
	}
	b.WriteString("\r\n")
	b.WriteString(r.Body)
	return b.String()
}

var hookTimestamp = regexp.MustCompile(`"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

// sameRequest compares raw requests, timestamps aside (same length: the
// Content-Length stays right).
func sameRequest(t *testing.T, want, got string, msg string) {
	t.Helper()
	require.Regexp(t, hookTimestamp, got, msg)
	norm := func(s string) string { return hookTimestamp.ReplaceAllString(s, `"timestamp":"T"`) }
	require.Equal(t, norm(want), norm(got), msg)
}

type webhookFixture struct {
	Snapshots []struct {
		After     string           `json:"after"`
		Workflows []map[string]any `json:"workflows"`
		Jobs      []map[string]any `json:"jobs"`
		Logs      []map[string]any `json:"logs"`
		Webhooks  []map[string]any `json:"webhooks"`
	} `json:"snapshots"`
	Requests []recordedRequest `json:"requests"`
}

// webhookRegistry has the scenario's handlers: noop, flaky, IncStep and
// FailingStep (config() max_attempts 1, throws "step failed on purpose").
func webhookRegistry(t *testing.T) *Registry {
	reg := fixtureRegistry()
	reg.RegisterStep("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		return wfObj(t, "n", intValue(n)+1), nil
	})
	reg.RegisterStep("FailingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, runtimeErr{"step failed on purpose"}
	}, WithMaxAttempts(1))
	return reg
}

// TestFixtureWebhooksReplay replays webhooks.json with the Go worker: a
// plain job completed, one failing then retried, a workflow step buried,
// then the retried job buried. After each step the rows are the plugin's
// and so are the HTTP requests, byte for byte (timestamps aside): no
// job.completed for a workflow step, job.failed with its attempt,
// job.buried then workflow.failed.
func TestFixtureWebhooksReplay(t *testing.T) {
	t.Parallel()
	var f webhookFixture
	readFixtureInto(t, "webhooks.json", &f)
	hl := newHookListener(t)
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.WorkflowChainSteps = -1 // one step per claim, as recorded
		cfg.Webhooks.Senders = 1    // in order
	})
	insertRecordedWorkflows(t, c, f.Snapshots[0].Workflows)
	insertRecorded(t, c, f.Snapshots[0].Jobs)
	insertRecordedLogs(t, c, f.Snapshots[0].Logs)
	for _, h := range f.Snapshots[0].Webhooks {
		url := strings.Replace(h["url"].(string), ":18765", ":"+hl.port(), 1)
		_, err := c.AddWebhook(context.Background(), h["event"].(string), url)
		require.NoError(t, err)
	}
	w, err := c.NewWorker(webhookRegistry(t))
	require.NoError(t, err)
	require.NoError(t, w.hooks.Start(context.Background()))
	t.Cleanup(func() { w.hooks.Stop() })

	sent := 0
	for i, snap := range f.Snapshots[1:] {
		switch {
		case strings.Contains(snap.After, "available_at forced to NOW()"):
			_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
			require.NoError(t, err)
			fallthrough
		case strings.Contains(snap.After, "worker ran job"):
			require.Equal(t, 1, stepOnce(t, w), snap.After)
		default:
			t.Fatalf("unknown step %q", snap.After)
		}
		compareJobs(t, c, snap.After, snap.Jobs)
		compareLogs(t, c, snap.After, snap.Logs)
		var want []recordedRequest
		for _, r := range f.Requests {
			if r.Snapshot == i+1 {
				want = append(want, r)
			}
		}
		got := hl.waitFor(t, sent+len(want))
		for k, r := range want {
			sameRequest(t, r.raw(hl.port()), string(got[sent+k]), snap.After)
		}
		sent += len(want)
	}
	// Nothing else was sent (a completed step sends nothing): give a
	// straggler the chance to arrive, then count.
	w.hooks.Stop()
	require.Len(t, hl.requests(), len(f.Requests))
}

// TestWebhooksOfForEachBranches: a failed for_each branch is job.failed
// while it has attempts, job.buried once it has none, and fails its
// workflow (workflow.failed) only when the step can no longer complete:
// with first_success, the first buried branch leaves the other one to
// succeed, the second does not.
func TestWebhooksOfForEachBranches(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.WorkflowChainSteps = -1
		cfg.Webhooks.Senders = 1
	})
	ctx := context.Background()
	for _, ev := range WebhookEvents {
		_, err := c.AddWebhook(ctx, ev, "http://127.0.0.1:"+hl.port()+"/"+ev)
		require.NoError(t, err)
	}
	reg := fixtureRegistry()
	reg.RegisterStep("Plan", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return wfObj(t, "items", []any{"a", "b"}), nil
	})
	reg.RegisterItemStep("Branch", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		s, _ := item.AsString()
		return nil, runtimeErr{"no " + s}
	}, WithMaxAttempts(2))
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("fe").Then("Plan").
		ForEach("items", "Branch", workflow.ForEachFirstSuccess), wfObj(t)))
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.hooks.Start(ctx))
	for stepOnce(t, w) > 0 {
		_, err := c.store.DB().Exec("UPDATE `" + c.store.Tables()["jobs"] + "` SET available_at = NOW()")
		require.NoError(t, err)
	}
	require.Equal(t, "failed", workflowRow(t, c, id).Status)
	w.hooks.Stop()
	var got []string
	for _, r := range hl.requests() {
		body := string(r[strings.Index(string(r), "\r\n\r\n")+4:])
		got = append(got, hookTimestamp.ReplaceAllString(body, `"timestamp":"T"`))
	}
	// Jobs: 1 Plan, 2 the for_each placeholder, 3 and 4 the branches (the
	// retried 3 is claimed again before 4). No workflow.failed after 3.
	require.Equal(t, []string{
		`{"event":"job.failed","data":{"job_id":3,"handler":"Branch","queue":"default","attempt":1,"error_message":"no a"},"timestamp":"T"}`,
		`{"event":"job.buried","data":{"job_id":3,"handler":"Branch","queue":"default","error_message":"no a"},"timestamp":"T"}`,
		`{"event":"job.failed","data":{"job_id":4,"handler":"Branch","queue":"default","attempt":1,"error_message":"no b"},"timestamp":"T"}`,
		`{"event":"job.buried","data":{"job_id":4,"handler":"Branch","queue":"default","error_message":"no b"},"timestamp":"T"}`,
		`{"event":"workflow.failed","data":{"workflow_id":1,"job_id":4,"handler":"Branch","error_message":"no b"},"timestamp":"T"}`,
	}, got)
}

// declaredTries is a failure whose job declares its own attempt limit, as
// a Contracts\Job's $tries comes back from the PHP pool.
type declaredTries struct{ n int }

func (d declaredTries) Error() string                     { return "failed with $tries declared" }
func (d declaredTries) MaxAttempts() int                  { return d.n }
func (d declaredTries) RetryDelay() (time.Duration, bool) { return 0, false }

// A job whose failure declares one attempt is buried at its first failure
// although its row allows three, and its webhook says job.buried, as the
// burial written: the event follows the write, not the row's max_attempts.
func TestWebhookFollowsADeclaredBurial(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 1 })
	_, err := c.AddWebhook(context.Background(), WebhookJobBuried, "http://127.0.0.1:"+hl.port()+"/buried")
	require.NoError(t, err)
	_, err = c.AddWebhook(context.Background(), WebhookJobFailed, "http://127.0.0.1:"+hl.port()+"/failed")
	require.NoError(t, err)
	reg := NewRegistry()
	reg.Register("tries_once", HandlerFunc(func(context.Context, *Job) error { return declaredTries{1} }))
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.hooks.Start(context.Background()))
	t.Cleanup(func() { w.hooks.Stop() })
	d, err := c.Dispatch(context.Background(), "tries_once", map[string]any{})
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	j, err := c.Job(context.Background(), d.ID)
	require.NoError(t, err)
	require.Equal(t, "buried", j.Status)
	got := hl.waitFor(t, 1)
	require.Contains(t, string(got[0]), "POST /buried ")
	require.Contains(t, string(got[0]), `"event":"job.buried"`)
}

// A batch job's success sends job.completed as a plain job's does (the
// plugin notifies before it records the batch's completion), with the
// same data; the batch's counters are written all the same.
func TestWebhookCompletedForBatchJob(t *testing.T) {
	t.Parallel()
	hl := newHookListener(t)
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Webhooks.Senders = 1 // in order
	})
	ctx := context.Background()
	_, err := c.AddWebhook(ctx, WebhookJobCompleted, "http://127.0.0.1:"+hl.port()+"/done")
	require.NoError(t, err)
	batch := insertBatch(t, c, 1, `[]`)
	plain, err := c.Dispatch(ctx, "ok", map[string]int{"i": 1})
	require.NoError(t, err)
	inBatch, err := c.Dispatch(ctx, "ok", map[string]int{"i": 2}, InBatch(batch))
	require.NoError(t, err)
	reg := NewRegistry()
	reg.HandleFunc("ok", func(context.Context, *Job) error { return nil })
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.hooks.Start(ctx))
	require.Equal(t, 1, stepOnce(t, w))
	require.Equal(t, 1, stepOnce(t, w))
	w.hooks.Stop() // drains: every request queued is sent
	require.True(t, batchRow(t, c, batch).FinishedAt.Valid)
	durationMS := regexp.MustCompile(`"duration_ms":\d+`)
	var got []string
	for _, r := range hl.requests() {
		body := string(r[bytes.Index(r, []byte("\r\n\r\n"))+4:])
		body = hookTimestamp.ReplaceAllString(body, `"timestamp":"T"`)
		got = append(got, durationMS.ReplaceAllString(body, `"duration_ms":0`))
	}
	require.Equal(t, []string{
		fmt.Sprintf(`{"event":"job.completed","data":{"job_id":%d,"handler":"ok","queue":"default","duration_ms":0},"timestamp":"T"}`, plain.ID),
		fmt.Sprintf(`{"event":"job.completed","data":{"job_id":%d,"handler":"ok","queue":"default","duration_ms":0},"timestamp":"T"}`, inBatch.ID),
	}, got)
}
