package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
)

// hostileQueues are the review's queue names (N1) for workflow wf: path
// segments a browser resolves, an encoded slash, markup, a query.
func hostileQueues(wf int64) []string {
	return []string{
		fmt.Sprintf("../workflows/%d/approve?", wf),
		fmt.Sprintf("../workflows/%d/cancel?", wf),
		fmt.Sprintf("../workflows/%d/reject?", wf),
		fmt.Sprintf("../../ui/workflows/%d/retry?x=", wf),
		"emails/high", "a%2Fb", "a/b", "..", ".", "%2e%2e", "?", "#top",
		`"><img src=x onerror=alert(1)>`, `'><svg onload=alert(1)>`, "</td><script>alert(1)</script>",
		"javascript:alert(1)", "q&status=buried", strings.Repeat("é", 64),
	}
}

var queueForm = regexp.MustCompile(`<form method="post" action="([^"]*)"><input type="hidden" name="csrf" value="([^"]*)"><input type="hidden" name="queue" value="([^"]*)"><button class="(pause|resume)">`)

// N1 without a browser: each queue row's form, read off the overview and
// resolved against the page's URL as a browser resolves a form's action,
// pauses that queue and nothing else (no other queue, no workflow
// action), and resumes it again. The row's links filter the job list by
// exactly that queue.
func TestDashboardQueueFormsPauseOnlyTheirQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wf := e.approvalWorkflow()
	queues := hostileQueues(wf)
	for _, q := range queues {
		e.dispatch(q, "report.build", 1)
	}
	b := newBrowser(t, e.server().URL)
	b.login()
	page, _ := url.Parse(b.base + "/ui/")
	post := func(q, want string) {
		t.Helper()
		_, body := b.do("GET", "/ui/", nil)
		var action, csrf string
		for _, m := range queueForm.FindAllStringSubmatch(body, -1) {
			if html.UnescapeString(m[3]) == q && m[4] == want {
				action, csrf = html.UnescapeString(m[1]), m[2]
			}
		}
		require.NotEmpty(t, action, "%q: no %s form on the overview", q, want)
		to, err := page.Parse(action)
		require.NoError(t, err)
		resp, body := b.do("POST", to.RequestURI(), url.Values{"csrf": {csrf}, "queue": {q}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%q: %s", q, body)
		require.Contains(t, resp.Header.Get("Location"), "flash=Queue+", q)
	}
	for _, q := range queues {
		post(q, "pause")
		paused, err := clientstore.Of(e.c).PausedQueues(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{q}, paused, "%q: the click paused that queue and no other", q)
		require.Equal(t, "waiting_for_signal", e.workflowStatus(wf), "%q: the workflow was not touched", q)
		require.Empty(t, e.signals(wf), "%q: no signal sent", q)
		post(q, "resume")
		require.False(t, e.paused(q), q)

		resp, body := b.do("GET", "/ui/jobs?"+url.Values{"queue": {q}}.Encode(), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%q: %s", q, body)
		require.Equal(t, 1, strings.Count(body, `<input type="checkbox" name="id"`), "%q: the filter matches exactly its queue's job", q)
	}
}

// N1's one-segment route (for bearer-token scripts): the segment is
// decoded once, so "emails%2Fhigh" pauses emails/high and "a%252Fb"
// pauses a%2Fb, not a/b.
func TestDashboardQueueSegmentRouteDecodesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	b := newBrowser(t, e.server().URL)
	b.header.Set("Authorization", "Bearer "+operatorToken)
	for _, q := range []string{"emails/high", "a%2Fb", "../workflows/1/approve?"} {
		resp, body := b.do("POST", "/ui/queues/"+url.PathEscape(q)+"/pause", url.Values{})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%q: %s", q, body)
		paused, err := clientstore.Of(e.c).PausedQueues(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{q}, paused, q)
		resp, _ = b.do("POST", "/ui/queues/"+url.PathEscape(q)+"/resume", url.Values{})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	}
}

// N13: a page number past the last page, negative, or not a number is a
// 400 saying the range, never a 500 or SQL text; the last page's list
// has no "older" link past it.
func TestDashboardPageOutOfRange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "report.build", 1)
	b := newBrowser(t, e.server().URL)
	b.login()
	for _, list := range []string{"/ui/jobs", "/ui/workflows"} {
		for _, p := range []string{"9223372036854775807", "9223372036854775808", "2001", "0", "-5", "1e3", "abc", strings.Repeat("9", 5000)} {
			resp, body := b.do("GET", list+"?page="+url.QueryEscape(p), nil)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s page=%s: %s", list, p, body)
			require.Contains(t, body, "a page is a whole number from 1 to 2000", p)
			require.NotContains(t, body, "SQL")
			require.Less(t, len(body), 1000, "the answer quotes a prefix of the page")
		}
		for _, p := range []string{"", "1", "2000"} {
			resp, body := b.do("GET", list+"?page="+p, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s page=%s: %s", list, p, body)
			require.NotContains(t, body, "page=2001")
		}
	}
}

// N14: an approval with a 300-character signal name and a pause of a
// 300-character queue are 400s with the rule, writing no row.
func TestDashboardLongNamesAre400(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wf := e.approvalWorkflow()
	b := newBrowser(t, e.server().URL)
	b.login()
	csrf := b.csrf("/ui/")
	long := strings.Repeat("s", 300)
	resp, body := b.do("POST", fmt.Sprintf("/ui/workflows/%d/approve", wf), url.Values{"csrf": {csrf}, "signal": {long}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "longer than 255 characters")
	require.NotContains(t, body, "Data too long")
	require.Empty(t, e.signals(wf))
	require.Equal(t, "waiting_for_signal", e.workflowStatus(wf))

	for q, rule := range map[string]string{strings.Repeat("q", 300): "longer than 64 characters", "nul\x00q": "control character", "esc\x1b[2J": "control character", " ": "empty"} {
		resp, body = b.do("POST", "/ui/queues/pause", url.Values{"csrf": {csrf}, "queue": {q}})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%q: %s", q, body)
		require.Contains(t, body, rule, q)
		require.NotContains(t, body, strings.Repeat("q", 100), "the answer quotes a prefix")
		paused, err := clientstore.Of(e.c).PausedQueues(e.ctx)
		require.NoError(t, err)
		require.Empty(t, paused)
	}
}

// fakeNow is a clock tests move by hand.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// N16: a session cookie copied before a logout is refused after it (on
// pages and actions); another session lives on.
func TestDashboardLogoutRevokesTheCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "report.build", 1)
	b := newBrowser(t, e.server().URL)
	b.login()
	other := newBrowser(t, b.base)
	other.login()
	csrf := b.csrf("/ui/")
	copied := *b.cookie

	resp, _ := b.do("POST", "/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.cookie = &copied
	resp, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the copied cookie no longer opens a page")
	require.Contains(t, resp.Header.Get("Location"), "/ui/login")
	resp, _ = b.do("POST", "/ui/queues/pause", url.Values{"csrf": {csrf}, "queue": {"default"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "nor acts")
	require.False(t, e.paused("default"))

	resp, _ = other.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "another session is not logged out")
}

// N17: after three wrong tokens from one address each further try waits
// (429 with Retry-After, doubling), even with the right token; once the
// wait is over the right token logs in and clears the count. The clock
// is the dashboard's, moved by hand.
func TestDashboardLoginThrottle(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *dashboard.Config) { c.Now = clk.now })
	b := newBrowser(t, e.server().URL)
	wrong := url.Values{"token": {"not-the-operator-token"}, "next": {"/ui/"}}
	right := url.Values{"token": {operatorToken}, "next": {"/ui/"}}
	for i := 0; i < 4; i++ {
		resp, body := b.do("POST", "/ui/login", wrong)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "try %d: %s", i+1, body)
	}
	resp, body := b.do("POST", "/ui/login", right)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Contains(t, body, "Too many wrong tokens")
	require.Nil(t, b.cookie, "no session while throttled")

	clk.add(time.Second)
	resp, _ = b.do("POST", "/ui/login", wrong)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = b.do("POST", "/ui/login", wrong)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "the wait doubles")
	for i := 0; i < 30; i++ {
		clk.add(10 * time.Minute)
		resp, _ = b.do("POST", "/ui/login", wrong)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp, _ = b.do("POST", "/ui/login", wrong)
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Equal(t, 300, wait, "the wait stops growing at 5 minutes")

	clk.add(5 * time.Minute)
	resp, _ = b.do("POST", "/ui/login", right)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotNil(t, b.cookie)
	b.cookie = nil
	resp, _ = b.do("POST", "/ui/login", wrong)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a login cleared the count")
}

// N17 for the bearer token: wrong tokens in the Authorization header are
// throttled like wrong logins (guessing cannot move there), the right
// one is refused while the wait lasts, then works.
func TestDashboardBearerThrottle(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *dashboard.Config) { c.Now = clk.now })
	b := newBrowser(t, e.server().URL)
	b.header.Set("Authorization", "Bearer guess-0123456789abcdef")
	for i := 0; i < 4; i++ {
		resp, _ := b.do("GET", "/ui/", nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "guess %d", i+1)
	}
	b.header.Set("Authorization", "Bearer "+operatorToken)
	resp, body := b.do("POST", "/ui/queues/pause", url.Values{"queue": {"default"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.False(t, e.paused("default"))
	clk.add(time.Second)
	resp, _ = b.do("POST", "/ui/queues/pause", url.Values{"queue": {"default"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, e.paused("default"))
}

// A login survives a restart: the cookie is signed with a key derived
// from the operator token, so a new dashboard over the same token (a
// restarted daemon, or a second one behind the same host name) accepts
// the cookie and its form token; a dashboard with another token refuses
// it.
func TestDashboardSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "report.build", 1)
	b := newBrowser(t, e.server().URL)
	b.login()
	csrf := b.csrf("/ui/")
	cookie := *b.cookie

	serve := func(token string) *browser {
		d, err := dashboard.New(dashboard.Config{Client: e.c, Registry: e.reg, OperatorToken: token})
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle("/ui/", d)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		nb := newBrowser(t, srv.URL)
		c := cookie
		nb.cookie = &c
		return nb
	}
	restarted := serve(operatorToken)
	resp, _ := restarted.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the cookie opens a page after the restart")
	resp, _ = restarted.do("POST", "/ui/queues/pause", url.Values{"csrf": {csrf}, "queue": {"default"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "and its form token still acts")
	require.True(t, e.paused("default"))

	rotated := serve("another-operator-token-9f8e7d6c")
	resp, _ = rotated.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a new operator token ends every session")
	require.Contains(t, resp.Header.Get("Location"), "/ui/login")
}
