package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	store "github.com/queuety-go/queuety/sql"
)

// The actions the other browser tests leave out, clicked in headless
// Chromium at 390 px (the narrow layout must keep every button usable):
// a waiting workflow's reject and cancel (and no pause it would refuse); a job's delete from its page; a
// bulk bury on the ticked rows and on all matching after the
// confirmation; and the logout.
func TestDashboardActionsInBrowser(t *testing.T) {
	e := newEnv(t, nil)
	wf := e.approvalWorkflow()
	other := e.approvalWorkflow()
	lone := e.dispatch("reports", "report.build", 1)[0]
	ticked := e.dispatch("exports", "export.csv", 3)
	api, err := httpapi.New(httpapi.Config{Listen: "127.0.0.1:0", OperatorToken: operatorToken, Registry: e.sessions(), UI: e.d})
	require.NoError(t, err)
	require.NoError(t, api.Start(e.ctx))
	t.Cleanup(func() { _ = api.Stop(context.Background()) })
	base := "http://" + api.Addr()

	wd := startChromium(t)
	wd.resize(390, 844)
	wd.open(base + "/ui/login")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#queues")

	// A workflow waiting for a signal offers no pause (the plugin pauses
	// running workflows only: the button answered "is not running").
	wd.open(fmt.Sprintf("%s/ui/workflows/%d", base, wf))
	wd.waitText("#wf-status")
	require.Zero(t, wd.count(`form[action$="/pause"]`))
	wd.click(`form[action$="/reject"] button`)
	require.Contains(t, wd.waitText("#flash"), "reject sent")
	require.Contains(t, e.signals(wf), "rejected")
	wd.open(fmt.Sprintf("%s/ui/workflows/%d", base, other))
	wd.click(`form[action$="/cancel"] button`)
	require.Contains(t, wd.waitText("#flash"), "cancel sent")
	e.waitWorkflow(other, "cancelled")

	wd.open(fmt.Sprintf("%s/ui/jobs/%d", base, lone))
	wd.click("button.job-delete")
	wd.waitText("#flash")
	_, err = e.c.Job(e.ctx, lone)
	require.True(t, errors.Is(err, store.ErrJobNotFound), "deleted: %v", err)

	wd.open(base + "/ui/jobs?queue=exports")
	wd.click(fmt.Sprintf(`#jobs tr[data-id="%d"] input[type=checkbox]`, ticked[0]))
	wd.click(`select[name=action] option[value=bury]`)
	wd.click(`button[name=scope][value=selected]`)
	wd.waitText("#flash")
	require.Equal(t, "buried", e.status(ticked[0]))
	require.Equal(t, "pending", e.status(ticked[1]), "only the ticked row")

	wd.open(base + "/ui/jobs?queue=exports&status=pending")
	wd.click(`select[name=action] option[value=bury]`)
	wd.click("#bulk-all")
	require.Contains(t, wd.waitText("#confirm-count"), "2")
	wd.click("#confirm")
	wd.waitText("#flash")
	for _, id := range ticked[1:] {
		require.Equal(t, "buried", e.status(id))
	}

	wd.click(".logout button")
	wd.waitText("#token")
	wd.open(base + "/ui/")
	wd.waitText("#token")
	require.Contains(t, wd.url(), "/ui/login", "logged out")
}
