package dashboard_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The first screen counts per queue, groups buried jobs by handler and
// error, and a group's retry moves exactly that group to pending.
func TestDashboardOverviewAndGroupRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "queuety.sleep", 3)
	timeouts := e.dispatch("mail", "send.mail", 3)
	e.bury(timeouts, "SMTP timeout")
	other := e.dispatch("mail", "send.mail", 1)
	e.bury(other, "mailbox full")
	_, err := e.c.Dispatch(e.ctx, "render", nil, queuety.InWorkerSession("gpu-render",
		workflow.WorkerSessionOptions{Queue: "gpu", Requirements: []string{"gpu:h100"}}))
	require.NoError(t, err)
	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<tr data-queue="default">`)
	unadmitted := between(t, body, `<table id="unadmitted">`, `</table>`)
	require.Contains(t, unadmitted, `<tr data-session="gpu-render">`)
	require.Contains(t, unadmitted, "gpu:h100")
	require.Contains(t, between(t, body, `<table id="unserved">`, `</table>`), `<tr data-queue="gpu">`)
	row := between(t, body, `<tr data-queue="mail">`, `</tr>`)
	require.Contains(t, row, `<td class="n pending">0</td>`)
	require.Contains(t, row, `<a href="/ui/jobs?queue=mail&status=buried">4</a>`)
	groups := between(t, body, `<table id="buried-groups">`, `</table>`)
	require.Contains(t, groups, "SMTP timeout")
	require.Contains(t, groups, "Retry 3")
	require.Contains(t, groups, "mailbox full")
	require.Contains(t, body, `<svg class="chart"`)

	resp, _ = b.do("POST", "/ui/buried/retry", url.Values{"csrf": {b.csrf("/ui/")}, "handler": {"send.mail"}, "class": {""}, "pattern": {"SMTP timeout"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "3+buried+send.mail+jobs+retried")
	for _, id := range timeouts {
		require.Equal(t, "pending", e.status(id))
	}
	require.Equal(t, "buried", e.status(other[0]), "another error's group is left alone")
}

// The job list filters by status, queue, handler and error text; a bulk
// action on "all matching" asks first with the count, then acts on those
// rows only.
func TestDashboardJobListAndBulk(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	keep := e.dispatch("default", "queuety.sleep", 2)
	a := e.dispatch("default", "report.build", 3)
	e.bury(a, "disk full on /var")
	bb := e.dispatch("other", "report.build", 2)
	e.bury(bb, "disk full on /var")
	b := newBrowser(t, e.server().URL)
	b.login()

	resp, body := b.do("GET", "/ui/jobs?status=buried&queue=default&error="+url.QueryEscape("full on"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<small id="matching">3 matching</small>`)
	for _, id := range a {
		require.Contains(t, body, fmt.Sprintf(`data-id="%d"`, id))
	}
	require.NotContains(t, body, fmt.Sprintf(`data-id="%d"`, bb[0]))
	_, body = b.do("GET", "/ui/jobs?error="+url.QueryEscape("%"), nil)
	require.Contains(t, body, `0 matching`, "the error text is matched literally")
	resp, _ = b.do("GET", "/ui/jobs?status=nope", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	token := b.csrf("/ui/jobs")
	form := url.Values{"csrf": {token}, "action": {"retry"}, "scope": {"all"}, "status": {"buried"}, "handler": {"report.build"}}
	resp, body = b.do("POST", "/ui/jobs/bulk", form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<strong>5</strong> jobs matching the filter`)
	for _, id := range append(a, bb...) {
		require.Equal(t, "buried", e.status(id), "nothing moves before the confirmation")
	}
	form.Set("confirm", "yes")
	resp, _ = b.do("POST", "/ui/jobs/bulk", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for _, id := range append(a, bb...) {
		require.Equal(t, "pending", e.status(id))
	}

	// A selection: delete one job, bury another.
	resp, _ = b.do("POST", "/ui/jobs/bulk", url.Values{"csrf": {token}, "action": {"delete"}, "scope": {"selected"}, "id": {fmt.Sprint(keep[0])}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, err := e.c.Job(e.ctx, keep[0])
	require.Error(t, err)
	resp, _ = b.do("POST", "/ui/jobs/bulk", url.Values{"csrf": {token}, "action": {"bury"}, "scope": {"selected"}, "id": {fmt.Sprint(keep[1])}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "buried", e.status(keep[1]))
	resp, _ = b.do("POST", "/ui/jobs/bulk", url.Values{"csrf": {token}, "action": {"retry"}, "scope": {"selected"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "nothing selected")

	resp, body = b.do("GET", fmt.Sprintf("/ui/jobs/%d", keep[1]), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Buried by an operator from the dashboard.")
	require.Contains(t, body, fmt.Sprintf(`<input type="hidden" name="id" value="%d"><input type="hidden" name="action" value="retry">`, keep[1]))
	resp, _ = b.do("GET", "/ui/jobs/999999", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A waiting workflow shows on the first screen and on its page (steps,
// timeline, state); approve stores the signal and the workflow moves on;
// the workflow list's bulk cancel asks first.
func TestDashboardWorkflowPageAndApprove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.approvalWorkflow()
	b := newBrowser(t, e.server().URL)
	b.login()
	_, body := b.do("GET", "/ui/", nil)
	require.Contains(t, between(t, body, `<table id="waiting">`, `</table>`), fmt.Sprintf(`data-workflow="%d"`, id))

	resp, body := b.do("GET", fmt.Sprintf("/ui/workflows/%d", id), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	steps := between(t, body, `<ol class="strip" id="steps">`, `</ol>`)
	require.Contains(t, steps, `<li class="current"`)
	require.Contains(t, steps, `<li class="pending"`)
	require.Contains(t, steps, "→ approval")
	require.Contains(t, body, `<svg class="timeline"`)
	require.Contains(t, body, `<pre id="state">`)

	resp, _ = b.do("POST", fmt.Sprintf("/ui/workflows/%d/approve", id), url.Values{"csrf": {b.csrf("/ui/")}, "signal": {"approval"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, []string{"approval"}, e.signals(id))
	e.waitWorkflow(id, "completed")
	_, body = b.do("GET", fmt.Sprintf("/ui/workflows/%d", id), nil)
	require.NotContains(t, body, `<li class="current"`)

	resp, body = b.do("GET", "/ui/workflows?status=completed&name=editorial", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, fmt.Sprintf(`data-id="%d"`, id))
	resp, _ = b.do("POST", fmt.Sprintf("/ui/workflows/%d/cancel", id), url.Values{"csrf": {b.csrf("/ui/")}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a refused lifecycle action comes back as a message")
	require.Equal(t, "completed", e.workflowStatus(id))
}

// between returns the part of s from start to the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "no %q", start)
	j := strings.Index(s[i:], end)
	require.GreaterOrEqual(t, j, 0)
	return s[i : i+j]
}

// The workflow list's bulk cancel acts on the ticked workflows only, and
// on "all matching" after the confirmation, which counts by status: a
// workflow already finished is named and left alone.
func TestDashboardWorkflowBulk(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a, b2, c := e.approvalWorkflow(), e.approvalWorkflow(), e.approvalWorkflow()
	b := newBrowser(t, e.server().URL)
	b.login()
	token := b.csrf("/ui/workflows")
	resp, _ := b.do("POST", "/ui/workflows/bulk", url.Values{"csrf": {token}, "action": {"cancel"}, "scope": {"selected"}, "id": {fmt.Sprint(a)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "cancelled", e.workflowStatus(a))
	require.Equal(t, "waiting_for_signal", e.workflowStatus(b2))

	form := url.Values{"csrf": {token}, "action": {"cancel"}, "scope": {"all"}, "name": {"editorial"}}
	resp, body := b.do("POST", "/ui/workflows/bulk", form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<strong>2</strong> workflows matching the filter: 2 waiting_for_signal.`)
	require.Contains(t, body, `Left as they are: 1 cancelled.`, "the finished one is named, not touched")
	form.Set("confirm", "yes")
	resp, _ = b.do("POST", "/ui/workflows/bulk", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "Cancelled: 2 workflows.", loc.Query().Get("flash"))
	require.Equal(t, "cancelled", e.workflowStatus(b2))
	require.Equal(t, "cancelled", e.workflowStatus(c))
}

// Under work --php the overview shows the pool's processes.
func TestDashboardShowsThePHPPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *dashboard.Config) {
		c.PoolStats = func() phppool.Stats {
			return phppool.Stats{PIDs: []int{4242, 0}, Busy: 1, Jobs: 17, Spawns: 3, Crashes: 1}
		}
	})
	b := newBrowser(t, e.server().URL)
	b.login()
	_, body := b.do("GET", "/ui/", nil)
	require.Contains(t, body, `<p id="pool">2 processes, 1 busy; 17 jobs run, 3 started, 0 recycled, 1 crashed, 0 killed. PIDs: 4242, restarting</p>`)
	_, body = newEnvPage(t)
	require.NotContains(t, body, `id="pool"`, "no pool, no pool section")
}

func newEnvPage(t *testing.T) (*http.Response, string) {
	e := newEnv(t, nil)
	b := newBrowser(t, e.server().URL)
	b.login()
	return b.do("GET", "/ui/", nil)
}

// A job page shows the limit the worker applies: a job whose payload's
// __queuety_runtime.max_attempts is 2, buried at its second attempt, reads
// 2/2 although the row's max_attempts column says 3. It shows the newest
// failure's class and stack trace from the log rows, and offers no "bury"
// on a job that is already buried.
func TestDashboardJobPageAttemptsAndTrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	st := clientstore.Of(e.c)
	id, _, err := st.InsertJob(e.ctx, store.InsertJob{Queue: "default", Handler: "demo.fail", MaxAttempts: 3,
		Payload: []byte(`{"n":9,"__queuety_runtime":{"max_attempts":2}}`)})
	require.NoError(t, err)
	_, err = st.DB().ExecContext(e.ctx, "UPDATE `"+st.Tables()["jobs"]+"` SET attempts = 2 WHERE id = ?", id)
	require.NoError(t, err)
	e.bury([]int64{id}, "demo failure 9")
	j, err := clientstore.Of(e.c).GetJob(e.ctx, id)
	require.NoError(t, err)
	failed := store.LogFor(j, "failed")
	failed.Attempt = store.Int(2)
	failed.ErrorMessage = sql.NullString{String: "demo failure 9", Valid: true}
	failed.ErrorClass = sql.NullString{String: "RuntimeException", Valid: true}
	failed.ErrorTrace = sql.NullString{String: "#0 /app/Jobs/Demo.php(12): Demo->handle()\n#1 {main}", Valid: true}
	require.NoError(t, st.InsertLogs(e.ctx, []store.LogRow{failed}))

	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", fmt.Sprintf("/ui/jobs/%d", id), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<dd id="attempts">2/2</dd>`)
	require.Contains(t, body, `<small id="error-class">RuntimeException</small>`)
	require.Contains(t, between(t, body, `<pre class="trace" id="trace">`, `</pre>`), "#0 /app/Jobs/Demo.php(12): Demo-&gt;handle()")
	require.Contains(t, body, `class="job-retry"`)
	require.NotContains(t, body, `class="job-bury"`, "the job is buried already")
	require.Contains(t, body, "&#34;__queuety_runtime&#34;: {", "the payload is pretty-printed")
	_, body = b.do("GET", "/ui/jobs?status=buried", nil)
	require.Contains(t, between(t, body, fmt.Sprintf(`data-id="%d"`, id), `</tr>`), `<td class="n attempts">2/2</td>`, "the list too")
}

// Buried jobs group by handler, error class and the message with numbers,
// ids and quoted values replaced: "demo failure 9/19/29/39" is one group
// of four (it was four groups of one), a different class is another
// group, and the group's retry moves exactly its rows.
func TestDashboardBuriedGroupsNormalized(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	st := clientstore.Of(e.c)
	var demo []int64
	for _, n := range []int{9, 19, 29, 39} {
		id := e.dispatch("default", "demo.fail", 1)[0]
		e.bury([]int64{id}, fmt.Sprintf("demo failure %d", n))
		demo = append(demo, id)
	}
	other := e.dispatch("default", "demo.fail", 1)
	e.bury(other, "demo failure 7")
	j, err := clientstore.Of(e.c).GetJob(e.ctx, other[0])
	require.NoError(t, err)
	row := store.LogFor(j, "buried")
	row.ErrorClass = sql.NullString{String: "LogicException", Valid: true}
	require.NoError(t, st.InsertLogs(e.ctx, []store.LogRow{row}))

	b := newBrowser(t, e.server().URL)
	b.login()
	_, body := b.do("GET", "/ui/", nil)
	groups := between(t, body, `<table id="buried-groups">`, `</table>`)
	require.Equal(t, 2, strings.Count(groups, "<tr data-handler="), groups)
	require.Contains(t, groups, "demo failure ‹n›")
	require.Contains(t, groups, "Retry 4")
	require.Contains(t, groups, `<td class="class">LogicException</td>`)

	resp, _ := b.do("POST", "/ui/buried/retry", url.Values{"csrf": {b.csrf("/ui/")}, "handler": {"demo.fail"}, "class": {""}, "pattern": {"demo failure ‹n›"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for _, id := range demo {
		require.Equal(t, "pending", e.status(id))
	}
	require.Equal(t, "buried", e.status(other[0]), "the LogicException group is left alone")
}

// The job search takes an id ("42" or "#42") or text found in the handler
// or the payload, literally; bulk actions on "all matching" carry it.
func TestDashboardJobSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a, err := e.c.Dispatch(e.ctx, "mail.send", map[string]any{"to": "ops@example.com"})
	require.NoError(t, err)
	bb, err := e.c.Dispatch(e.ctx, "report.build", map[string]any{"month": "2026-11"})
	require.NoError(t, err)
	b := newBrowser(t, e.server().URL)
	b.login()
	for q, want := range map[string][]int64{
		fmt.Sprint(bb.ID):        {bb.ID},
		fmt.Sprintf("#%d", a.ID): {a.ID},
		"ops@example":            {a.ID},
		"report.":                {bb.ID},
		"100%":                   nil,
	} {
		_, body := b.do("GET", "/ui/jobs?q="+url.QueryEscape(q), nil)
		require.Contains(t, body, fmt.Sprintf(`<small id="matching">%d matching</small>`, len(want)), q)
		for _, id := range want {
			require.Contains(t, body, fmt.Sprintf(`data-id="%d"`, id), q)
		}
	}
	_, body := b.do("GET", "/ui/jobs?q=ops", nil)
	require.Contains(t, body, `<input type="hidden" name="q" value="ops">`, "the bulk form carries the search")
}
