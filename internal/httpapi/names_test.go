package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/internal/storetest"
	store "github.com/queuety-go/queuety/sql"
)

// N18 (and N14 on the worker API): queue names with control characters,
// over jobs.queue's 64 characters or not UTF-8 are refused by register,
// heartbeat and poll with 422 validation_failed naming the field and the
// rule, and no worker row is written; path-like and markup names (N1's)
// are plain data and register as sent.
func TestWorkerAPIQueueNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, q := range map[string]any{
		"NUL":      map[string]any{"worker_id": "n1", "task_queue": "nul\x00q"},
		"ESC":      map[string]any{"worker_id": "n2", "task_queue": "esc\x1b[2J"},
		"TAB":      map[string]any{"worker_id": "n3", "task_queue": "tab\tq"},
		"newline":  map[string]any{"worker_id": "n4", "task_queue": "a\nb"},
		"DEL":      map[string]any{"worker_id": "n5", "task_queues": []string{"ok", "del\x7f"}},
		"300 long": map[string]any{"worker_id": "n6", "task_queue": strings.Repeat("q", 300)},
		"65 long":  map[string]any{"worker_id": "n7", "task_queues": []string{strings.Repeat("é", 65)}},
	} {
		before := e.dump()
		r := e.do(req{path: "/api/worker/register", body: q})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %s", name, r.raw)
		require.Equal(t, ReasonValidationFailed, r.reason(), name)
		require.Regexp(t, `task_queues?(\.\d)?`, string(r.raw), name)
		require.Regexp(t, `control characters|greater than 64 characters`, string(r.raw), name)
		require.NotContains(t, string(r.raw), strings.Repeat("q", 80), "%s: the answer does not repeat a long name", name)
		require.Equal(t, before, e.dump(), "%s: nothing stored", name)
	}
	e.register("w1", "gpu-activities")
	r := e.do(req{path: "/api/worker/activity-tasks/poll", body: map[string]any{"worker_id": "w1", "task_queue": "gpu\x00activities"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.raw)
	r = e.do(req{path: "/api/worker/heartbeat", body: map[string]any{"worker_id": "w1", "task_queues": []string{"\x1b"}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.raw)

	for i, q := range []string{"../workflows/7/approve?", "emails/high", "a%2Fb", `"><img src=x onerror=alert(1)>`, strings.Repeat("é", 64)} {
		id := "ok" + string(rune('a'+i))
		r := e.do(req{path: "/api/worker/register", body: map[string]any{"worker_id": id, "task_queue": q}})
		require.Equal(t, http.StatusCreated, r.status, "%q: %s", q, r.raw)
		require.Equal(t, q, r.body["task_queue"], "stored as sent")
	}
}

// N10: without tokens, a request whose Host is not a loopback name or
// the listen host (a DNS-rebinding page's) is refused 421
// host_not_allowed before any route, the worker API's register and the
// dashboard included; loopback names pass. With tokens the Host is not
// checked (the token is the guard).
func TestNoAuthRefusesForeignHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) {
		c.InsecureNoAuth = true
		c.WorkerToken, c.OperatorToken = "", ""
		c.Listen = "127.0.0.1:0"
		c.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	})
	register := map[string]any{"worker_id": "rebound", "task_queue": "q"}
	for _, host := range []string{"rebind.evil.example", "rebind.evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.5:80", "[::2]:80"} {
		before := e.dump()
		r := e.do(req{path: "/api/worker/register", noToken: true, host: host, body: register})
		require.Equal(t, http.StatusMisdirectedRequest, r.status, "%s: %s", host, r.raw)
		require.Equal(t, ReasonHostNotAllowed, r.reason(), host)
		require.Equal(t, before, e.dump(), "%s: no worker registered", host)
		r = e.do(req{method: http.MethodGet, path: "/ui/", noToken: true, host: host})
		require.Equal(t, http.StatusMisdirectedRequest, r.status, "%s: the dashboard too", host)
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost", "LOCALHOST.:80", "app.localhost:80", "[::1]:8080", "127.8.9.10"} {
		r := e.do(req{method: http.MethodGet, path: "/api/cluster/info", noToken: true, host: host})
		require.Equal(t, http.StatusOK, r.status, "%s: %s", host, r.raw)
	}
	named := LocalHostGuard("queuety.internal:8080", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	require.True(t, allowedHost("queuety.internal:8080", "queuety.internal"))
	require.NotNil(t, named)

	withTokens := newEnv(t)
	r := withTokens.do(req{method: http.MethodGet, path: "/api/cluster/info", host: "rebind.evil.example"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.raw)
}

// FuzzWorkerQueueNames registers and polls with any queue name: the
// answer is 201 exactly when store.CheckName accepts the name, a 422
// naming the field otherwise, never a 5xx; an accepted name comes back as
// sent, but for surrounding spaces (trimmed).
//
//	go test ./internal/httpapi -run '^$' -fuzz '^FuzzWorkerQueueNames$' -fuzztime 60s
func FuzzWorkerQueueNames(f *testing.F) {
	clk := clock.NewFake(t0)
	st, _ := storetest.New(f, clk, 8)
	reg := sessions.New(st, sessions.Config{Clock: clk, StaleAfter: 60 * time.Second})
	srv, err := New(Config{WorkerToken: workerToken, OperatorToken: operatorToken, Registry: reg, ServerID: "test", Version: "test"})
	require.NoError(f, err)
	e := &env{ctx: context.Background(), st: st, clk: clk, reg: reg, srv: srv}
	for _, s := range []string{"default", "emails/high", "a%2Fb", "../workflows/7/approve?", "..", "nul\x00q", "esc\x1b[2J", "\t", " ", "", "\xff", strings.Repeat("q", 64), strings.Repeat("q", 65), strings.Repeat("é", 64), "\u0085", "\u202egnp.exe", `"><svg onload=alert(1)>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// json.Marshal turns invalid UTF-8 into U+FFFD: expect what is
		// sent. (A raw invalid byte is refused by CheckName.)
		q = strings.ToValidUTF8(q, "\uFFFD")
		r, err := e.send(req{path: "/api/worker/register", body: map[string]any{"worker_id": "fz", "task_queue": q}})
		require.NoError(t, err)
		require.Less(t, r.status, 500, "%q: %s", q, r.raw)
		if store.CheckName(store.QueueName, q) == nil {
			require.Equal(t, http.StatusCreated, r.status, "%q: %s", q, r.raw)
			// The registry trims surrounding spaces, as the plugin's
			// --queue list does.
			got, _ := r.body["task_queue"].(string)
			require.Equal(t, strings.TrimSpace(q), strings.TrimSpace(got))
			return
		}
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%q: %s", q, r.raw)
		require.Contains(t, string(r.raw), "task_queue")
	})
}
