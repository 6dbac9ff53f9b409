package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	"github.com/queuety-go/queuety/queuety/machine"
)

// failingBatch dispatches a batch of three sleeps and one failure (one
// attempt) with then/catch/finally callbacks, runs it with a worker and
// waits until it has finished.
func (e *env) failingBatch() int64 {
	e.t.Helper()
	jobs := []queuety.BatchJob{
		{Handler: builtins.Sleep, Payload: map[string]any{"ms": 1}},
		{Handler: builtins.Sleep, Payload: map[string]any{"ms": 1}},
		{Handler: builtins.Fail, Payload: map[string]any{"message": "invoice 4711 rejected", "__queuety_runtime": map[string]any{"max_attempts": 1}}},
		{Handler: builtins.Sleep, Payload: map[string]any{"ms": 1}},
	}
	for _, class := range []string{"App\\Batches\\Done", "App\\Batches\\Alert", "App\\Batches\\Cleanup"} {
		e.reg.RegisterBatchCallback(class, func(context.Context, *queuety.Batch) error { return nil })
	}
	id, _, err := e.c.DispatchBatch(e.ctx, queuety.BatchSpec{Name: "invoices", Then: "App\\Batches\\Done", Catch: "App\\Batches\\Alert", Finally: "App\\Batches\\Cleanup"}, jobs)
	require.NoError(e.t, err)
	e.startWorker()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := clientstore.Of(e.c).GetBatch(e.ctx, id)
		require.NoError(e.t, err)
		if b.FinishedAt.Valid {
			return id
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("batch %d did not finish: %+v", id, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The schedules page lists next and last run; pause and resume flip the
// row's enabled flag (which the tick respects), run now makes it due, and
// run now on a paused schedule is refused with the reason.
func TestDashboardSchedulesPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id, err := e.c.AddSchedule(e.ctx, queuety.NewSchedule{Handler: "nightly.report", Cron: "0 3 * * *", Queue: "reports"})
	require.NoError(t, err)
	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/schedules", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	row := between(t, body, fmt.Sprintf(`<tr data-schedule="%d"`, id), `</tr>`)
	require.Contains(t, row, "0 3 * * *")
	require.Contains(t, row, ` 03:00:00</td>`, "the next run")
	require.Contains(t, row, `<td class="last">–</td>`, "never ran")

	csrf := b.csrf("/ui/schedules")
	post := func(action string) string {
		resp, _ := b.do("POST", fmt.Sprintf("/ui/schedules/%d/%s", id, action), url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		return resp.Header.Get("Location")
	}
	require.Contains(t, post("pause"), "nightly.report+paused")
	s, err := e.c.FindSchedule(e.ctx, "nightly.report")
	require.NoError(t, err)
	require.False(t, s.Enabled)
	require.Contains(t, post("run"), "is+paused", "run now on a paused schedule")
	require.Contains(t, post("resume"), "resumed")
	require.Contains(t, post("run"), "due+now")
	due, err := e.c.DueSchedules(e.ctx)
	require.NoError(t, err)
	require.Len(t, due, 1, "the next tick takes it")
	resp, _ = b.do("POST", "/ui/schedules/999/pause", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A batch with a failing job: the list shows its progress and state, its
// page the callbacks (catch fired, then will not, finally fired), the
// failed job and every job row.
func TestDashboardBatchPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.failingBatch()
	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/batches", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	row := between(t, body, fmt.Sprintf(`<tr data-batch="%d">`, id), `</tr>`)
	require.Contains(t, row, "invoices")
	require.Contains(t, row, "100%")
	require.Contains(t, row, "finished with failures")
	require.Contains(t, row, `<td class="n failed">1</td>`)

	resp, body = b.do("GET", fmt.Sprintf("/ui/batches/%d", id), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "4 of 4 jobs done, 0 pending, 1 failed")
	cb := between(t, body, `<table id="callbacks">`, `</table>`)
	require.Contains(t, between(t, cb, `<tr data-kind="catch">`, `</tr>`), "fired")
	require.Contains(t, between(t, cb, `<tr data-kind="then">`, `</tr>`), "will not fire")
	require.Contains(t, between(t, cb, `<tr data-kind="finally">`, `</tr>`), "fired")
	require.Equal(t, 4, strings.Count(between(t, body, `<table id="batch-jobs">`, `</table>`), "<tr data-id="))
	require.Contains(t, body, "invoice 4711 rejected")
	resp, _ = b.do("GET", "/ui/batches/999", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// State machines: the list with the current state and the events it
// accepts, the page with its event log and state.
func TestDashboardMachinePages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id, _, err := e.c.DispatchMachine(e.ctx, machine.New("order").State("awaiting_payment", "").On("paid", "shipped", "", "").State("shipped", "completed"), map[string]any{"order": 7})
	require.NoError(t, err)
	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/machines", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	row := between(t, body, fmt.Sprintf(`<tr data-machine="%d">`, id), `</tr>`)
	require.Contains(t, row, `<td class="current">awaiting_payment</td>`)
	require.Contains(t, row, "paid")
	resp, body = b.do("GET", fmt.Sprintf("/ui/machines/%d", id), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<dd id="current-state">awaiting_payment</dd>`)
	require.Contains(t, body, "machine_waiting")
	require.Contains(t, between(t, body, `<pre id="state">`, `</pre>`), "&#34;order&#34;: 7")
	resp, _ = b.do("GET", "/ui/machines?status=nope", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// Webhooks are listed with where their deliveries are counted; the
// workers page shows every registration by runtime, the queues the
// plugin's PHP workers ran jobs on (rows claimed with no reserved_by), and
// the worker sessions.
func TestDashboardWebhooksAndWorkersPages(t *testing.T) {
	t.Parallel()
	// As serve builds it: no worker in the process, so no deliveries.
	e := newEnv(t, func(cfg *dashboard.Config) { cfg.WebhookDeliveries = nil })
	_, err := e.c.AddWebhook(e.ctx, "job.buried", "https://hooks.example.com/queuety")
	require.NoError(t, err)
	reg := e.sessions()
	_, err = reg.Register(e.ctx, sessions.Registration{WorkerID: "py-1", Queues: []string{"ml"}, Runtime: "python", Capabilities: []string{"gpu:h100"}})
	require.NoError(t, err)
	_, err = reg.Register(e.ctx, sessions.Registration{WorkerID: "go-1", Queues: []string{"default"}})
	require.NoError(t, err)
	php := e.dispatch("wp-mail", "App\\Jobs\\SendMail", 1)
	st := clientstore.Of(e.c)
	_, err = st.DB().ExecContext(e.ctx, "UPDATE `"+st.Tables()["jobs"]+"` SET status = 'completed', reserved_at = NOW(), completed_at = NOW() WHERE id = ?", php[0])
	require.NoError(t, err)
	gpu := "ml"
	res, err := reg.Create(e.ctx, "", "py-1", sessions.Options{SessionID: "gpu-render", Queue: &gpu, Requirements: []string{"gpu:h100"}})
	require.NoError(t, err)
	require.True(t, res.Admitted, "%+v", res)

	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/webhooks", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "https://hooks.example.com/queuety")
	require.Contains(t, body, "queuety_webhook_requests_total")
	require.Contains(t, body, "This process runs no worker that sends webhooks (serve, or --no-webhooks)")
	require.NotContains(t, body, `<td class="sent">`, "no delivery columns for a process that sends none")

	resp, body = b.do("GET", "/ui/workers", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-runtime="python">python: 1 live`)
	require.Contains(t, body, `data-runtime="go">go: 1 live`)
	require.Contains(t, between(t, body, `<tr data-worker="py-1">`, `</tr>`), `<td class="runtime">python</td>`)
	require.Contains(t, between(t, body, `<table id="php-workers">`, `</table>`), `<tr data-queue="wp-mail">`)
	require.Contains(t, between(t, body, `<table id="sessions">`, `</table>`), `<tr data-session="gpu-render">`)
	_, body = b.do("GET", "/ui/", nil)
	require.Contains(t, between(t, body, `<p class="note" id="php-seen">`, `</p>`), "ran jobs within the hour on: wp-mail.", "the overview names them too")
}

// The webhooks page shows what this process's worker delivered to each
// registration: a real delivery to a local endpoint that fails once is a
// retried try with its error, then sent; deliveries to a webhook removed
// since are listed apart; the note says other processes' are on their
// /metrics.
func TestDashboardWebhookDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	hook := newFlakyHook(t)
	flaky, err := e.c.AddWebhook(e.ctx, queuety.WebhookJobCompleted, hook.srv.URL+"/done")
	require.NoError(t, err)
	other := newFlakyHook(t)
	gone, err := e.c.AddWebhook(e.ctx, queuety.WebhookJobCompleted, other.srv.URL+"/gone")
	require.NoError(t, err)
	e.startWorker()
	e.dispatch("default", builtins.Noop, 2)
	settled := func() bool {
		byID := map[int64]queuety.WebhookDelivery{}
		for _, d := range e.deliveries() {
			byID[d.WebhookID] = d
		}
		return byID[flaky].Sent == 2 && byID[gone].Sent == 2
	}
	deadline := time.Now().Add(20 * time.Second)
	for !settled() {
		require.False(t, time.Now().After(deadline), "deliveries: %+v", e.deliveries())
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, e.c.RemoveWebhook(e.ctx, gone))

	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/webhooks", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	row := between(t, body, fmt.Sprintf(`<tr data-webhook="%d">`, flaky), `</tr>`)
	require.Contains(t, row, `<td class="sent">2</td>`)
	require.Contains(t, row, `<td class="failed">0 <small>(1 retried)</small></td>`)
	require.Contains(t, row, "HTTP status 500")
	require.Regexp(t, `<td class="last">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>`, row)
	removed := between(t, body, `<table id="webhooks-removed">`, `</table>`)
	require.Contains(t, removed, fmt.Sprintf(`<tr data-webhook="%d">`, gone))
	require.Contains(t, removed, "/gone")
	require.NotContains(t, between(t, body, `<table id="webhooks">`, `</table>`), "/gone")
	require.Contains(t, body, "Deliveries and failures of this process's worker since it started")
	require.Contains(t, body, "queuety_webhook_requests_total")
}
