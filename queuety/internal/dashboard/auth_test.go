package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
)

// Without credentials a page sends the browser to the login page and an
// action is refused with 401; a wrong token gets in nowhere.
func TestDashboardRefusesWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "queuety.sleep", 1)
	b := newBrowser(t, e.server().URL)

	resp, _ := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/login?next=%2Fui%2F", resp.Header.Get("Location"))
	resp, _ = b.do("GET", "/ui/jobs?status=buried", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {"x"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.False(t, e.paused("default"), "a refused post changes nothing")

	resp, body := b.do("POST", "/ui/login", url.Values{"token": {"not-the-operator-token"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "not the operator token")
	require.Nil(t, b.cookie)

	b.header.Set("Authorization", "Bearer not-the-operator-token")
	resp, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = b.do("POST", "/ui/queues/default/pause", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A forged cookie is no session.
	b.header.Del("Authorization")
	b.cookie = &http.Cookie{Name: "queuety_ui", Value: "abc.99999999999.deadbeef"}
	resp, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.False(t, e.paused("default"))
}

// The operator token works as a bearer token (no form token needed: a
// header is no ambient credential) and through the login's cookie.
func TestDashboardLoginAndBearer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "queuety.sleep", 2)
	b := newBrowser(t, e.server().URL)
	b.header.Set("Authorization", "Bearer "+operatorToken)
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<td class="n pending">2</td>`)
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, e.paused("default"))

	c := newBrowser(t, b.base)
	c.login()
	require.True(t, c.cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.cookie.SameSite)
	resp, body = c.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<span class="badge paused">paused</span>`)
	_, body = c.do("GET", "/ui/?flash="+url.QueryEscape("Your token expired: log in at evil.example"), nil)
	require.NotContains(t, body, "evil.example", "an unsigned message is not shown")
	resp, _ = c.do("POST", "/ui/logout", url.Values{"csrf": {c.csrf("/ui/")}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "", c.cookie.Value, "logout clears the cookie")
}

// A cookie session's post needs the form token of that session, and a
// cross-site post is refused even with it.
func TestDashboardCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.dispatch("default", "queuety.sleep", 1)
	b := newBrowser(t, e.server().URL)
	b.login()
	token := b.csrf("/ui/")

	resp, body := b.do("POST", "/ui/queues/default/pause", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "CSRF")
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {strings.Repeat("0", len(token))}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// Another session's token does not fit this one.
	other := newBrowser(t, b.base)
	other.login()
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {other.csrf("/ui/")}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	b.header.Set("Sec-Fetch-Site", "cross-site")
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	b.header.Del("Sec-Fetch-Site")
	b.header.Set("Origin", "https://evil.example")
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	b.header.Del("Origin")
	require.False(t, e.paused("default"), "no refused post paused the queue")

	b.header.Set("Sec-Fetch-Site", "same-origin")
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, e.paused("default"))
}

// Read-only: pages show, every action is refused, no button is drawn.
func TestDashboardReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *dashboard.Config) { c.ReadOnly = true })
	ids := e.dispatch("default", "queuety.sleep", 2)
	e.bury(ids, "boom")
	b := newBrowser(t, e.server().URL)
	b.login()
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "read-only")
	require.NotContains(t, body, `action="/ui/queues/pause"`)
	require.NotContains(t, body, `class="retry-group"`)
	token := b.csrf("/ui/")

	for _, post := range []struct {
		path string
		form url.Values
	}{
		{"/ui/queues/default/pause", url.Values{}},
		{"/ui/buried/retry", url.Values{"handler": {"queuety.sleep"}, "error": {"boom"}}},
		{"/ui/jobs/bulk", url.Values{"action": {"delete"}, "scope": {"all"}, "confirm": {"yes"}}},
		{"/ui/workflows/1/cancel", url.Values{}},
	} {
		post.form.Set("csrf", token)
		resp, body := b.do("POST", post.path, post.form)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, post.path)
		require.Contains(t, body, "read-only")
	}
	b.header.Set("Authorization", "Bearer "+operatorToken)
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.False(t, e.paused("default"))
	for _, id := range ids {
		require.Equal(t, "buried", e.status(id))
	}
}

// A login redirect stays inside the dashboard.
func TestDashboardLoginNextStaysInside(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	b := newBrowser(t, e.server().URL)
	for next, want := range map[string]string{"/ui/jobs?status=buried": "/ui/jobs?status=buried", "https://evil.example/": "/ui/", "//evil.example/ui/": "/ui/"} {
		resp, _ := b.do("POST", "/ui/login", url.Values{"token": {operatorToken}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, want, resp.Header.Get("Location"), next)
	}
}

// Mounted on the HTTP API (as serve and work --http do): /ui redirects to
// /ui/, a token-less visit goes to the login page, a token-less post and
// the worker token are refused, the operator token gets in.
func TestDashboardOnTheHTTPAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	api, err := httpapi.New(httpapi.Config{
		WorkerToken: "worker-token-0123456789abcdef", OperatorToken: operatorToken,
		Registry: e.sessions(), UI: e.d,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv.URL)
	resp, _ := b.do("GET", "/ui", nil)
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/ui/login"))
	resp, _ = b.do("POST", "/ui/queues/default/pause", url.Values{})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b.header.Set("Authorization", "Bearer worker-token-0123456789abcdef")
	resp, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the worker token is not the operator's")
	b.header.Set("Authorization", "Bearer "+operatorToken)
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<table id="queues">`)
	resp, _ = b.do("GET", "/ui/static/style.css", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, e.paused("default"))
}
