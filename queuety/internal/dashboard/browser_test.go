package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
)

// screenshotDir is where the browser test writes its screenshots:
// $QUEUETY_SCREENSHOTS, or testdata/screenshots (ignored by git).
func screenshotDir() string {
	if d := os.Getenv("QUEUETY_SCREENSHOTS"); d != "" {
		return d
	}
	return "testdata/screenshots"
}

// The dashboard in headless Chromium, served by the HTTP API on a random
// loopback port over its own database with a worker running: log in, read
// the queues table, retry a group of buried jobs, approve a waiting
// workflow, pause a queue; screenshots of the first screen and of the
// workflow's page.
func TestDashboardInBrowser(t *testing.T) {
	e := newEnv(t, nil)
	reports := e.dispatch("reports", "report.build", 4) // no worker serves "reports": they stay pending
	mail := e.dispatch("mail", "send.mail", 3)
	e.bury(mail, "SMTP timeout after 30s")
	e.bury(e.dispatch("mail", "send.mail", 1), "mailbox full")
	done := make([]int64, 0, 5)
	for i := 0; i < 5; i++ {
		d, err := e.c.Dispatch(e.ctx, builtins.Sleep, map[string]any{"ms": 1})
		require.NoError(t, err)
		done = append(done, d.ID)
	}
	wf := e.approvalWorkflow() // starts the worker on "default"
	for _, id := range done {
		waitStatus(t, e, id, "completed")
	}

	api, err := httpapi.New(httpapi.Config{
		Listen: "127.0.0.1:0", WorkerToken: "worker-token-0123456789abcdef", OperatorToken: operatorToken,
		Registry: e.sessions(), UI: e.d,
	})
	require.NoError(t, err)
	require.NoError(t, api.Start(e.ctx))
	t.Cleanup(func() { _ = api.Stop(context.Background()) })
	base := "http://" + api.Addr()

	wd := startChromium(t)
	wd.open(base + "/ui/")
	require.Contains(t, wd.url(), "/ui/login", "a token-less visit lands on the login page")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#queues")
	require.Equal(t, base+"/ui/", wd.url())

	require.Equal(t, "4", wd.text(`tr[data-queue="reports"] td.pending`))
	require.Equal(t, "4", wd.text(`tr[data-queue="mail"] td.buried`))
	// The five sleeps and the workflow's step jobs so far.
	completed, err := e.c.Jobs(e.ctx, queuety.JobFilter{Queue: "default", Status: "completed"})
	require.NoError(t, err)
	require.Greater(t, len(completed), 5)
	require.Equal(t, fmt.Sprint(len(completed)), wd.text(`tr[data-queue="default"] td.completed`))
	require.Equal(t, "running", wd.text(`tr[data-queue="reports"] td.state`))
	require.Contains(t, wd.text("#tp-day"), fmt.Sprintf("Last 24 hours: %d completed", len(completed)), "the chart counts the completed log rows")
	require.Contains(t, wd.text("#waiting"), "editorial")
	require.Equal(t, 1, wd.count(`#unserved tr[data-queue="reports"]`), "no worker serves reports")
	require.Equal(t, 0, wd.count(`#unserved tr[data-queue="default"]`))
	overview := wd.screenshot(screenshotDir(), "dashboard-overview.png")
	t.Logf("screenshot of the first screen: %s", overview)

	// The largest group (3 × SMTP timeout) comes first.
	require.Contains(t, wd.text(`#buried-groups tbody tr:first-child`), "SMTP timeout")
	wd.click(`#buried-groups tbody tr:first-child button.retry-group`)
	require.Contains(t, wd.waitText("#flash"), "3 buried send.mail jobs retried")
	for _, id := range mail {
		require.Equal(t, "pending", e.status(id))
	}
	require.Equal(t, "1", wd.text(`tr[data-queue="mail"] td.buried`))
	require.Equal(t, "3", wd.text(`tr[data-queue="mail"] td.pending`))

	wd.click(fmt.Sprintf(`#waiting a[href="/ui/workflows/%d"]`, wf))
	require.Equal(t, "waiting_for_signal", wd.waitText("#wf-status"))
	require.Equal(t, fmt.Sprintf("%s/ui/workflows/%d", base, wf), wd.url())
	require.Equal(t, 1, wd.count("#steps li.done"), "Draft")
	require.Equal(t, 1, wd.count("#steps li.current"), "the approval")
	require.Equal(t, 1, wd.count("#steps li.pending"), "Publish")
	require.Equal(t, 1, wd.count("svg.timeline rect.done"), "Draft's bar")
	page := wd.screenshot(screenshotDir(), "dashboard-workflow.png")
	t.Logf("screenshot of workflow #%d's page: %s", wf, page)
	wd.click("button.approve")
	require.Contains(t, wd.waitText("#flash"), "approve sent")
	require.Equal(t, []string{"approval"}, e.signals(wf))
	e.waitWorkflow(wf, "completed")

	wd.open(base + "/ui/")
	require.False(t, e.paused("reports"))
	wd.click(`tr[data-queue="reports"] button.pause`)
	require.Contains(t, wd.waitText("#flash"), "Queue reports paused")
	require.True(t, e.paused("reports"), "a queue_states row pauses the queue")
	require.Equal(t, "paused", wd.text(`tr[data-queue="reports"] td.state`))
	for _, id := range reports {
		require.Equal(t, "pending", e.status(id))
	}
	after := wd.screenshot(screenshotDir(), "dashboard-overview-after.png")
	t.Logf("screenshot of the first screen after the actions: %s", after)
	require.False(t, strings.Contains(wd.text("body"), "rendering failed"))
}

func waitStatus(t *testing.T, e *env, id int64, status string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for e.status(id) != status {
		if time.Now().After(deadline) {
			t.Fatalf("job %d: still %s, want %s", id, e.status(id), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
