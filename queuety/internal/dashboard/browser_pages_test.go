package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/machine"
	store "github.com/queuety-go/queuety/sql"
)

// docsImages is where the test copies the three screenshots the docs
// show when QUEUETY_DOCS_SCREENSHOTS is set to the repository's docs/img
// (make docs-screenshots); by default it writes none there.
func docsImages() string { return os.Getenv("QUEUETY_DOCS_SCREENSHOTS") }

// Every page of the dashboard in headless Chromium, at desktop width and
// at 390 px, in light and dark mode: each renders without a server error,
// never scrolls sideways, follows the colour scheme, and is kept as a
// screenshot. Then the live refresh: a job dispatched after the page
// loaded appears without a reload, and a hidden tab schedules no
// refresh; and the actions of the new pages (pause, resume and run a
// schedule; search) through the browser.
func TestDashboardEveryPageInBrowser(t *testing.T) {
	e := newEnv(t, nil)
	// A webhook on a local endpoint that fails its first request: the
	// worker's real deliveries (one retried try, then sent) show on the
	// webhooks page.
	hook := newFlakyHook(t)
	hookID, err := e.c.AddWebhook(e.ctx, queuety.WebhookJobCompleted, hook.srv.URL+"/done")
	require.NoError(t, err)
	batch := e.failingBatch() // starts a worker on "default"
	var delivered queuety.WebhookDelivery
	deadline := time.Now().Add(20 * time.Second)
	// job.completed for the batch's three completed jobs, the first
	// tried twice.
	for delivered.Retried != 1 || delivered.Sent != 3 || hook.ok() != 3 {
		require.False(t, time.Now().After(deadline), "deliveries: %+v", e.deliveries())
		time.Sleep(20 * time.Millisecond)
		for _, d := range e.deliveries() {
			if d.WebhookID == hookID {
				delivered = d
			}
		}
	}
	wf := e.approvalWorkflow()
	failed := e.dispatch("mail", "send.mail", 4)
	for i, id := range failed {
		e.bury([]int64{id}, fmt.Sprintf("demo failure %d", 9+10*i))
	}
	j, err := clientstore.Of(e.c).GetJob(e.ctx, failed[0])
	require.NoError(t, err)
	logRow := store.LogFor(j, "buried")
	logRow.ErrorClass.String, logRow.ErrorClass.Valid = "RuntimeException", true
	logRow.ErrorTrace.String, logRow.ErrorTrace.Valid = "#0 /srv/app/Jobs/SendMail.php(41): SendMail->handle()\n#1 {main}", true
	require.NoError(t, clientstore.Of(e.c).InsertLogs(e.ctx, []store.LogRow{logRow}))
	machineID, _, err := e.c.DispatchMachine(e.ctx, machine.New("order").State("awaiting_payment", "").On("paid", "shipped", "", "").State("shipped", "completed"), map[string]any{"order": 7})
	require.NoError(t, err)
	schedule, err := e.c.AddSchedule(e.ctx, queuety.NewSchedule{Handler: "nightly.report", Cron: "0 3 * * *", Queue: "reports"})
	require.NoError(t, err)
	_, err = e.c.AddWebhook(e.ctx, "job.buried", "https://hooks.example.com/queuety")
	require.NoError(t, err)
	reg := e.sessions()
	_, err = reg.Register(e.ctx, sessions.Registration{WorkerID: "py-render-1", Queues: []string{"render"}, Runtime: "python", Capabilities: []string{"gpu:h100"}})
	require.NoError(t, err)
	render := "render"
	_, err = reg.Create(e.ctx, "", "py-render-1", sessions.Options{SessionID: "gpu-render", Queue: &render, Requirements: []string{"gpu:h100"}})
	require.NoError(t, err)

	api, err := httpapi.New(httpapi.Config{Listen: "127.0.0.1:0", OperatorToken: operatorToken, Registry: reg, UI: e.d})
	require.NoError(t, err)
	require.NoError(t, api.Start(e.ctx))
	t.Cleanup(func() { _ = api.Stop(context.Background()) })
	base := "http://" + api.Addr()

	wd := startChromium(t)
	wd.open(base + "/")
	require.Contains(t, wd.url(), "/ui/login", "/ leads to the dashboard, which asks for the token")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#queues")

	pages := []struct{ name, path, marker string }{
		{"overview", "/ui/", "#queues"},
		{"jobs", "/ui/jobs", "#jobs"},
		{"job", fmt.Sprintf("/ui/jobs/%d", failed[0]), "#trace"},
		{"workflows", "/ui/workflows", "#workflows"},
		{"workflow", fmt.Sprintf("/ui/workflows/%d", wf), "#steps"},
		{"schedules", "/ui/schedules", "#schedules"},
		{"batches", "/ui/batches", "#batches"},
		{"batch", fmt.Sprintf("/ui/batches/%d", batch), "#callbacks"},
		{"machines", "/ui/machines", "#machines"},
		{"machine", fmt.Sprintf("/ui/machines/%d", machineID), "#machine-events"},
		{"webhooks", "/ui/webhooks", "#webhooks"},
		{"workers", "/ui/workers", "#sessions"},
	}
	modes := []struct {
		name          string
		width, height int
		scheme        string
		background    string // body's computed background
	}{
		{"desktop-light", 1400, 1700, "light", "rgb(246, 247, 249)"},
		{"desktop-dark", 1400, 1700, "dark", "rgb(18, 22, 30)"},
		{"mobile-light", 390, 844, "light", "rgb(246, 247, 249)"},
		{"mobile-dark", 390, 844, "dark", "rgb(18, 22, 30)"},
	}
	shots := 0
	for _, m := range modes {
		wd.resize(m.width, m.height)
		wd.colorScheme(m.scheme)
		for _, p := range pages {
			wd.open(base + p.path)
			wd.waitText(p.marker)
			require.Zero(t, wd.count("#error"), "%s %s: %s", m.name, p.name, wd.text("body"))
			var bg string
			wd.exec(`return getComputedStyle(document.body).backgroundColor`, &bg)
			require.Equal(t, m.background, bg, "%s %s: the colour scheme", m.name, p.name)
			var overflow struct {
				Page, View int
			}
			wd.exec(`return {Page: document.documentElement.scrollWidth, View: document.documentElement.clientWidth}`, &overflow)
			require.LessOrEqual(t, overflow.Page, overflow.View, "%s %s: the page scrolls sideways", m.name, p.name)
			wd.screenshot(filepath.Join(screenshotDir(), m.name), p.name+".png")
			shots++
		}
	}
	t.Logf("%d screenshots under %s", shots, screenshotDir())

	// The numbers the review found wrong, and the groups.
	wd.resize(1400, 1700)
	wd.colorScheme("light")
	wd.open(fmt.Sprintf("%s/ui/workflows/%d", base, wf))
	require.Contains(t, wd.waitText("dl.facts"), "1/3", "0-based, as wp queuety workflow status")
	wd.open(base + "/ui/")
	require.Contains(t, wd.waitText(`#buried-groups tr[data-handler="send.mail"]`), "demo failure ‹n›")
	require.Contains(t, wd.text(`#buried-groups tr[data-handler="send.mail"]`), "Retry 3", "three without a class")
	require.Equal(t, 1, wd.count(`#buried-groups tr[data-handler="queuety.fail"]`), "the batch's failure")
	if dir := docsImages(); dir != "" {
		wd.screenshot(dir, "dashboard.png") // the README shows it
		wd.open(fmt.Sprintf("%s/ui/workflows/%d", base, wf))
		wd.waitText("#steps")
		wd.screenshot(dir, "dashboard-workflow.png")
		wd.open(fmt.Sprintf("%s/ui/batches/%d", base, batch))
		wd.waitText("#callbacks")
		wd.screenshot(dir, "dashboard-failing-batch.png")
		wd.open(base + "/ui/")
		wd.waitText("#queues")
	}

	// Live: a queue that appears after the page loaded shows up without
	// a reload; a hidden tab has no refresh scheduled, a visible one
	// fetches again.
	require.Zero(t, wd.count(`#queues tr[data-queue="live-check"]`))
	var before int
	wd.exec(`return window.queuetyLive.fetches`, &before)
	e.dispatch("live-check", "report.build", 1)
	require.Equal(t, "1", wd.waitText(`#queues tr[data-queue="live-check"] td.pending`))
	require.Equal(t, base+"/ui/", wd.url(), "no navigation")
	var hidden struct {
		Timer   any
		Fetches int
	}
	wd.exec(`Object.defineProperty(document, "visibilityState", {value: "hidden", configurable: true});
document.dispatchEvent(new Event("visibilitychange"));
return {Timer: window.queuetyLive.timer, Fetches: window.queuetyLive.fetches}`, &hidden)
	require.Nil(t, hidden.Timer, "no refresh is scheduled while the tab is hidden")
	var after int
	wd.exec(`Object.defineProperty(document, "visibilityState", {value: "visible", configurable: true});
document.dispatchEvent(new Event("visibilitychange"));
return window.queuetyLive.fetches`, &after)
	require.Equal(t, hidden.Fetches+1, after, "back in view, it fetches at once")
	wd.click("#live")
	require.Equal(t, "paused", wd.text("#live"))
	wd.click("#live")
	require.Equal(t, "live", wd.text("#live"))

	// Schedules: pause, run now (refused while paused), resume, run now.
	wd.open(base + "/ui/schedules")
	row := fmt.Sprintf(`tr[data-schedule="%d"]`, schedule)
	wd.click(row + " button.pause")
	require.Contains(t, wd.waitText("#flash"), "nightly.report paused")
	require.Equal(t, "paused", wd.text(row+" td.state"))
	wd.click(row + " button.resume")
	require.Contains(t, wd.waitText("#flash"), "resumed")
	wd.click(row + " button.run")
	require.Contains(t, wd.waitText("#flash"), "due now")
	due, err := e.c.DueSchedules(e.ctx)
	require.NoError(t, err)
	require.Len(t, due, 1)

	// Search by payload text from the jobs page.
	wd.open(base + "/ui/jobs")
	wd.typeInto("#search", "demo")
	wd.click(".filters button")
	wd.waitURL("q=demo")
	require.Contains(t, wd.waitText("#matching"), "0 matching", "the payloads do not hold it: the errors do")
	wd.open(base + "/ui/jobs?q=" + fmt.Sprint(failed[1]))
	require.Contains(t, wd.waitText("#matching"), "1 matching", "a number is an id")
	require.Equal(t, 1, wd.count(fmt.Sprintf(`#jobs tr[data-id="%d"]`, failed[1])))

	// Webhooks: the worker's deliveries to the endpoint that failed once.
	wd.open(base + "/ui/webhooks")
	hookRow := fmt.Sprintf(`#webhooks tr[data-webhook="%d"]`, hookID)
	require.Equal(t, "3", wd.waitText(hookRow+" td.sent"))
	require.Equal(t, "0 (1 retried)", wd.text(hookRow+" td.failed"))
	require.Contains(t, wd.text(hookRow+" td.last-error"), "HTTP status 500")
	require.Contains(t, wd.text("#deliveries"), "this process's worker")

	// The job page: the trace, the applied limit, no bury on a buried job.
	wd.open(fmt.Sprintf("%s/ui/jobs/%d", base, failed[0]))
	require.Contains(t, wd.waitText("#trace"), "SendMail.php(41)")
	require.Zero(t, wd.count("button.job-bury"))
	require.False(t, strings.Contains(wd.text("body"), "rendering failed"))
}
