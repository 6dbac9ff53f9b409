package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
)

// cssString quotes s as a CSS string for an attribute selector.
func cssString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// N1 in headless Chromium: the review's queue names each get a pending
// job; on the overview, a click on each row's Pause pauses that queue
// and nothing else (the waiting workflow the name points at is neither
// approved, rejected, cancelled nor retried, no other queue is paused),
// Resume resumes it, and the row's link opens the job list filtered to
// exactly that queue. A buried group whose handler is such a name is
// retried by its button, and only its jobs.
func TestDashboardHostileNamesInBrowser(t *testing.T) {
	e := newEnv(t, nil)
	wf := e.approvalWorkflow()
	queues := hostileQueues(wf)
	for _, q := range queues {
		e.dispatch(q, "report.build", 1)
	}
	handler := fmt.Sprintf("../workflows/%d/cancel?", wf)
	buried := e.dispatch("mail", handler, 2)
	e.bury(buried, "</td><script>alert(1)</script>")
	other := e.dispatch("mail", "send.mail", 1)
	e.bury(other, "other")

	api, err := httpapi.New(httpapi.Config{
		Listen: "127.0.0.1:0", WorkerToken: "worker-token-0123456789abcdef", OperatorToken: operatorToken,
		Registry: e.sessions(), UI: e.d,
	})
	require.NoError(t, err)
	require.NoError(t, api.Start(e.ctx))
	t.Cleanup(func() { _ = api.Stop(context.Background()) })
	base := "http://" + api.Addr()

	wd := startChromium(t)
	wd.open(base + "/ui/login")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#queues")

	untouched := func(q string) {
		t.Helper()
		require.Equal(t, "waiting_for_signal", e.workflowStatus(wf), "%q: the workflow was not touched", q)
		require.Empty(t, e.signals(wf), "%q: no signal was sent", q)
	}
	for _, q := range queues {
		row := "#queues tr[data-queue=" + cssString(q) + "]"
		wd.open(base + "/ui/")
		require.Equal(t, 1, wd.count(row), "%q: one row", q)
		wd.click(row + " button.pause")
		require.Contains(t, wd.waitText("#flash"), "paused", q)
		paused, err := clientstore.Of(e.c).PausedQueues(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{q}, paused, "%q: the click paused that queue and no other", q)
		untouched(q)
		require.Equal(t, "paused", wd.text(row+" td.state"), q)
		wd.open(base + "/ui/")

		wd.click(row + " button.resume") // from a page without a flash: waitText sees the next one's
		require.Contains(t, wd.waitText("#flash"), "resumed", q)
		require.False(t, e.paused(q), q)

		wd.open(base + "/ui/")
		wd.click(row + " td:first-child a")
		wd.waitText("#matching")
		require.Contains(t, wd.url(), base+"/ui/jobs?", q)
		require.Equal(t, 1, wd.count(`input[name="id"]`), "%q: the link lists exactly its queue's job", q)
		untouched(q)
	}

	wd.open(base + "/ui/")
	grp := "#buried-groups tr[data-handler=" + cssString(handler) + "]"
	require.Equal(t, 1, wd.count(grp))
	wd.click(grp + " button.retry-group")
	require.Contains(t, wd.waitText("#flash"), "2 buried")
	for _, id := range buried {
		require.Equal(t, "pending", e.status(id))
	}
	require.Equal(t, "buried", e.status(other[0]), "only the clicked group")
	untouched(handler)
	require.Equal(t, 0, wd.count("img[src=x], svg[onload], script:not([src])"), "no name became markup")
}
