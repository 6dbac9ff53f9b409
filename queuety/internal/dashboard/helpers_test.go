package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

const operatorToken = "operator-token-0123456789abcdef"

type env struct {
	t   *testing.T
	ctx context.Context
	c   *queuety.Client
	reg *queuety.Registry
	d   *dashboard.Dashboard
	// worker is the first worker startWorker started: the dashboard
	// shows its webhook deliveries, as work --http shows its own.
	worker atomic.Pointer[queuety.Worker]
}

// newEnv opens a client on its own database and builds a dashboard over
// it, showing the webhook deliveries of the env's first worker (mutate
// may change the dashboard's config).
func newEnv(t *testing.T, mutate func(*dashboard.Config)) *env {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{
		DSN: testdb.New(t), PollInterval: 10 * time.Millisecond, ShutdownGrace: 5 * time.Second,
		RescueSchedule: "off", Workflows: true, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(ctx)
	require.NoError(t, err)
	reg := queuety.NewRegistry()
	builtins.Register(reg)
	reg.RegisterStep("Draft", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		time.Sleep(50 * time.Millisecond) // a bar of some width on the timeline
		o := phpjson.NewObject()
		o.Set("draft", phpjson.String("Three findings, one recommendation."))
		return o, nil
	})
	reg.RegisterStep("Publish", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		o := phpjson.NewObject()
		o.Set("published", phpjson.Bool(true))
		return o, nil
	})
	e := &env{t: t, ctx: ctx, c: c, reg: reg}
	cfg := dashboard.Config{Client: c, Registry: reg, OperatorToken: operatorToken, WebhookDeliveries: e.deliveries}
	if mutate != nil {
		mutate(&cfg)
	}
	e.d, err = dashboard.New(cfg)
	require.NoError(t, err)
	return e
}

// sessions is a worker-session registry over the env's tables, for the
// HTTP API the dashboard is mounted on.
func (e *env) sessions() *sessions.Registry {
	return sessions.New(clientstore.Of(e.c), sessions.Config{})
}

// server serves the dashboard alone on an httptest server.
func (e *env) server() *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/ui/", e.d)
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return srv
}

// dispatch queues n jobs of handler on queue, returning their ids.
func (e *env) dispatch(queue, handler string, n int) []int64 {
	e.t.Helper()
	var ids []int64
	for i := 0; i < n; i++ {
		d, err := e.c.Dispatch(e.ctx, handler, map[string]any{"i": i}, queuety.OnQueue(queue))
		require.NoError(e.t, err)
		ids = append(ids, d.ID)
	}
	return ids
}

// bury buries each job with message.
func (e *env) bury(ids []int64, message string) {
	e.t.Helper()
	for _, id := range ids {
		require.NoError(e.t, e.c.BuryJob(e.ctx, id, message))
	}
}

func (e *env) status(id int64) string {
	e.t.Helper()
	j, err := e.c.Job(e.ctx, id)
	require.NoError(e.t, err)
	return j.Status
}

func (e *env) paused(queue string) bool {
	e.t.Helper()
	qs, err := clientstore.Of(e.c).PausedQueues(e.ctx)
	require.NoError(e.t, err)
	for _, q := range qs {
		if q == queue {
			return true
		}
	}
	return false
}

// approvalWorkflow dispatches a workflow that drafts, waits for approval,
// then publishes, and runs a worker until it waits.
func (e *env) approvalWorkflow() int64 {
	e.t.Helper()
	d, err := workflow.New("editorial").Then("Draft").WaitForApproval().Then("Publish").Build(phpjson.NewObject())
	require.NoError(e.t, err)
	id, _, err := e.c.DispatchWorkflow(e.ctx, d)
	require.NoError(e.t, err)
	e.startWorker()
	e.waitWorkflow(id, "waiting_for_signal")
	return id
}

func (e *env) startWorker() {
	e.t.Helper()
	w, err := e.c.NewWorker(e.reg)
	require.NoError(e.t, err)
	e.worker.CompareAndSwap(nil, w)
	require.NoError(e.t, w.Start(e.ctx))
	e.t.Cleanup(func() { _ = w.Stop(context.Background()) })
}

// flakyHook is a local webhook endpoint that answers 500 to its first
// request and 200 to the rest.
type flakyHook struct {
	srv *httptest.Server
	n   atomic.Int64 // requests answered
}

func newFlakyHook(t *testing.T) *flakyHook {
	h := &flakyHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if h.n.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// ok is how many requests got a 200.
func (h *flakyHook) ok() int { return int(max(0, h.n.Load()-1)) }

// deliveries is what the env's first worker sent.
func (e *env) deliveries() []queuety.WebhookDelivery {
	if w := e.worker.Load(); w != nil {
		return w.WebhookDeliveries()
	}
	return nil
}

func (e *env) workflowStatus(id int64) string {
	e.t.Helper()
	r, err := e.c.WorkflowStatus(e.ctx, id)
	require.NoError(e.t, err)
	return string(r.Status)
}

func (e *env) waitWorkflow(id int64, status string) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for e.workflowStatus(id) != status {
		if time.Now().After(deadline) {
			e.t.Fatalf("workflow %d: still %s, want %s", id, e.workflowStatus(id), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signals lists the signal names stored for a workflow.
func (e *env) signals(id int64) []string {
	e.t.Helper()
	rows, err := clientstore.Of(e.c).SignalsOf(e.ctx, id)
	require.NoError(e.t, err)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names
}

// browser is a plain HTTP client that keeps cookies by hand and does not
// follow redirects.
type browser struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	header http.Header
}

func newBrowser(t *testing.T, base string) *browser {
	return &browser{t: t, base: base, header: http.Header{}}
}

var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (b *browser) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	resp, err := client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	for _, c := range resp.Cookies() {
		if c.Name == "queuety_ui" {
			b.cookie = c
		}
	}
	return resp, string(raw)
}

func (b *browser) login() {
	b.t.Helper()
	resp, _ := b.do("POST", "/ui/login", url.Values{"token": {operatorToken}, "next": {"/ui/"}})
	require.Equal(b.t, http.StatusSeeOther, resp.StatusCode)
	require.NotNil(b.t, b.cookie, "login sets the session cookie")
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token from a page.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	resp, body := b.do("GET", path, nil)
	require.Equal(b.t, http.StatusOK, resp.StatusCode, body)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no csrf field on %s", path)
	return m[1]
}

var _ = store.StatusPending
