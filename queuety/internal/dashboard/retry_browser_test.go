package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// Retry in the browser does what it says. A buried workflow step retried
// from the first screen's buried group, or from its job page, re-runs
// through its workflow (as `queuety workflow retry`): the workflow goes
// back to running and ends completed, where a pending job would wait for
// ever under a failed workflow. "On all N matching" on a page of every
// status offers no action until one is picked, names what it touches by
// status ("retry 2 buried jobs"), and never retries a completed job; the
// workflow list's bulk actions likewise.
func TestDashboardRetryActionsInBrowser(t *testing.T) {
	e := newEnv(t, nil)
	var failing atomic.Bool
	var runs atomic.Int32
	e.reg.RegisterStep("Flaky", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		runs.Add(1)
		if failing.Load() {
			return nil, errors.New("upstream down")
		}
		return phpjson.NewObject(), nil
	}, queuety.WithMaxAttempts(1))
	failedWorkflow := func() (wf, step int64) {
		t.Helper()
		failing.Store(true)
		d, err := workflow.New("flaky").MaxAttempts(1).Then("Flaky").Then("Publish").Build(phpjson.NewObject())
		require.NoError(t, err)
		wf, _, err = e.c.DispatchWorkflow(e.ctx, d)
		require.NoError(t, err)
		e.waitWorkflow(wf, "failed")
		var id int64
		require.NoError(t, clientstore.Of(e.c).DB().Get(&id, "SELECT id FROM `"+clientstore.Of(e.c).Tables()["jobs"]+"` WHERE workflow_id = ? AND status = 'buried'", wf))
		failing.Store(false)
		return wf, id
	}
	e.startWorker()
	wf1, step1 := failedWorkflow()

	srv := e.server()
	wd := startChromium(t)
	wd.open(srv.URL + "/ui/login")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#queues")

	// The first screen's buried group.
	require.Contains(t, wd.text(`#buried-groups tbody tr:first-child`), "Flaky")
	before := runs.Load()
	wd.click(`#buried-groups tbody tr:first-child button.retry-group`)
	require.Contains(t, wd.waitText("#flash"), fmt.Sprintf("1 workflows retried from their failed step (#%d)", wf1))
	e.waitWorkflow(wf1, "completed")
	require.Equal(t, before+1, runs.Load(), "the step ran once more")
	require.Equal(t, "buried", e.status(step1), "the buried attempt stays as it was; the workflow enqueued the step again")

	// A job page's retry.
	wf2, step2 := failedWorkflow()
	wd.open(fmt.Sprintf("%s/ui/jobs/%d", srv.URL, step2))
	wd.click(`.actions form:first-child button`)
	require.Contains(t, wd.waitText("#flash"), fmt.Sprintf("(#%d)", wf2))
	e.waitWorkflow(wf2, "completed")

	// "On all N matching", every status: 2 buried and 3 completed jobs.
	mail := e.dispatch("mail", "send.mail", 5)
	e.bury(mail[:2], "SMTP timeout")
	_, err := clientstore.Of(e.c).DB().Exec("UPDATE `"+clientstore.Of(e.c).Tables()["jobs"]+"` SET status = 'completed', completed_at = NOW() WHERE id IN (?, ?, ?)", mail[2], mail[3], mail[4])
	require.NoError(t, err)
	wd.open(srv.URL + "/ui/jobs?handler=send.mail")
	require.Contains(t, wd.waitText("#matching"), "5 matching")
	require.Equal(t, "choose an action…", wd.text(`select[name="action"] option:checked`), "no action is picked for a page of every status")
	wd.click("#bulk-all")
	require.Contains(t, wd.waitText("#error"), "Choose an action first")
	for _, id := range mail[:2] {
		require.Equal(t, "buried", e.status(id))
	}
	wd.open(srv.URL + "/ui/jobs?handler=send.mail")
	wd.click(`select[name="action"] option[value="retry"]`)
	wd.click("#bulk-all")
	require.Equal(t, "retry 2 buried jobs?", strings.ToLower(wd.waitText(".confirm h1")))
	require.Contains(t, wd.text("#confirm-left"), "3 completed")
	wd.click("#confirm")
	require.Contains(t, wd.waitText("#flash"), "Retried: 2 jobs.")
	for _, id := range mail[:2] {
		require.Equal(t, "pending", e.status(id))
	}
	for _, id := range mail[2:] {
		require.Equal(t, "completed", e.status(id), "a completed job is never retried")
	}

	// A page of buried jobs offers retry first.
	wd.open(srv.URL + "/ui/jobs?status=buried")
	require.Equal(t, "retry", wd.waitText(`select[name="action"] option:checked`))

	// The workflow list the same way: every status, no action picked;
	// retry on all matching touches the failed one only.
	wf3, _ := failedWorkflow()
	wd.open(srv.URL + "/ui/workflows")
	require.Equal(t, "choose an action…", wd.waitText(`select[name="action"] option:checked`))
	wd.click(`select[name="action"] option[value="retry"]`)
	wd.click("#bulk-all")
	require.Equal(t, "retry 1 failed workflows?", strings.ToLower(wd.waitText(".confirm h1")))
	require.Contains(t, wd.text("#confirm-left"), "2 completed")
	wd.click("#confirm")
	require.Contains(t, wd.waitText("#flash"), "Retried: 1 workflows.")
	e.waitWorkflow(wf3, "completed")
	wd.open(srv.URL + "/ui/workflows?status=failed")
	require.Equal(t, "retry", wd.waitText(`select[name="action"] option:checked`))
}
