package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// post sends a form post with a bearer token, without following the
// answer's redirect.
func post(t *testing.T, addr, path, token string) int {
	t.Helper()
	rq, err := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(""))
	require.NoError(t, err)
	rq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rq.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(rq)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// serve and work --http serve the dashboard at /ui/: a token-less visit
// lands on the login page, the operator token gets the queues table, the
// token-less metrics listener has no dashboard, and --ui-read-only
// refuses actions. The webhooks page shows work's own deliveries (to a
// local endpoint that fails once: one retried try, then sent); serve runs
// no worker, and work --no-webhooks sends none, and the page says so.
func TestDashboardOnServeAndWork(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	dispatch(t, dsn, "--queue", "held", "queuety.noop")
	var hookHits atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hookHits.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(hook.Close)
	runOK(t, on(dsn, "webhook", "add", "job.completed", hook.URL+"/done")...)
	const wt, ot = "wt-0123456789abcdef", "ot-0123456789abcdef"
	env := []string{"QUEUETY_WORKER_TOKEN=" + wt, "QUEUETY_OPERATOR_TOKEN=" + ot}

	d := startListening(t, exec.Command(bin, "--dsn", dsn, "serve", "--listen", "127.0.0.1:0", "--ui-read-only"), env...)
	status, body := scrape(t, d.addr, "/ui/", "") // follows the redirect
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="token"`, "the login page")
	status, body = scrape(t, d.addr, "/ui/", ot)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `<tr data-queue="held">`)
	require.Contains(t, body, "read-only")
	require.Equal(t, http.StatusForbidden, post(t, d.addr, "/ui/queues/held/pause", ot))
	require.Equal(t, http.StatusUnauthorized, post(t, d.addr, "/ui/queues/held/pause", wt))
	_, body = scrape(t, d.addr, "/ui/webhooks", ot)
	require.Contains(t, body, "This process runs no worker that sends webhooks (serve, or --no-webhooks)")
	d.stop(t)

	w := startListening(t, exec.Command(bin, "--dsn", dsn, "work", "--http", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--poll-interval", "10ms", "--rescue-schedule", "off"), env...)
	var metricsAddr string
	waitFor(t, 10*time.Second, "metrics listener", func() bool {
		if i := strings.Index(w.stderr.String(), "metrics on http://"); i >= 0 {
			rest := w.stderr.String()[i+len("metrics on http://"):]
			metricsAddr = rest[:strings.Index(rest, "/metrics")]
			return true
		}
		return false
	})
	require.Equal(t, http.StatusSeeOther, post(t, w.addr, "/ui/queues/held/pause", ot))
	status, body = scrape(t, w.addr, "/ui/", ot)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `<span class="badge paused">paused</span>`)
	status, _ = scrape(t, metricsAddr, "/ui/", "")
	require.Equal(t, http.StatusNotFound, status, "the token-less listener serves no dashboard")
	dispatch(t, dsn, "queuety.noop")
	waitFor(t, 20*time.Second, "the delivery retried and sent", func() bool {
		_, body = scrape(t, w.addr, "/ui/webhooks", ot)
		return strings.Contains(body, `<td class="sent">1</td>`)
	})
	require.Contains(t, body, `<td class="failed">0 <small>(1 retried)</small></td>`)
	require.Contains(t, body, "HTTP status 500")
	require.Contains(t, body, "Deliveries and failures of this process's worker")
	require.EqualValues(t, 2, hookHits.Load())
	w.stop(t)

	// --no-webhooks: the worker sends none, and the page says so.
	quiet := startListening(t, exec.Command(bin, "--dsn", dsn, "work", "--http", "127.0.0.1:0", "--no-webhooks",
		"--poll-interval", "10ms", "--rescue-schedule", "off"), env...)
	_, body = scrape(t, quiet.addr, "/ui/webhooks", ot)
	require.Contains(t, body, "This process runs no worker that sends webhooks (serve, or --no-webhooks)")
	quiet.stop(t)
}
