package dashboard_test

import (
	"net/url"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
)

// The dashboard of a network and a single site in headless Chromium: the
// all-sites overview lists the sites needing attention first (the single
// site's database dropped: unreachable), the switcher goes to the site
// typed, on the page it was on, and shows that site's jobs; a count on
// the overview leads to its site's filtered list; an action on a site's
// page acts on that site; no page scrolls sideways at 390 px. Screenshots
// of the overview (docs/img/dashboard-sites.png with
// QUEUETY_DOCS_SCREENSHOTS).
func TestDashboardSitesInBrowser(t *testing.T) {
	// The overview's counts kept as long as they are by default.
	n := newNetwork(t, func(c *dashboard.Config) { c.OverviewTTL = 0 })
	n.jobs("wp_", "report.build", 2)
	b2 := n.jobs("wp_2_", "send.mail", 4)
	n.set("wp_2_", b2[0], "status = 'buried', failed_at = NOW(), error_message = 'SMTP timeout after 30s'")
	n.set("wp_2_", b2[1], "status = 'buried', failed_at = NOW(), error_message = 'mailbox full'")
	b3 := n.jobs("wp_3_", "import.feed", 3)
	n.set("wp_3_", b3[0], "status = 'processing', reserved_at = NOW() - INTERVAL 25 MINUTE")
	b4 := n.jobs("wp_4_", "resize.image", 5)
	n.set("wp_4_", b4[0], "available_at = NOW() - INTERVAL 47 MINUTE")
	n.set("wp_4_", b4[1], "available_at = NOW() - INTERVAL 90 MINUTE")
	admin, err := sqlx.Open("mysql", testdb.ServerDSN())
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.Exec("DROP DATABASE `" + n.other + "`")
	require.NoError(t, err)

	wd := startChromium(t)
	wd.open(n.srv.URL + "/ui/")
	require.Contains(t, wd.url(), "/ui/login")
	wd.typeInto("#token", operatorToken)
	wd.click("#login")
	wd.waitText("#sites")
	require.Equal(t, n.srv.URL+"/ui/", wd.url())
	require.Equal(t, 5, wd.count("#sites tbody tr[data-site]"))
	require.Contains(t, wd.text("#sites tbody tr:first-child"), "unreachable", "the dropped database first")
	require.Equal(t, "shop", attr(wd, "#sites tbody tr:first-child", "data-site"))
	require.Equal(t, "blog-3", attr(wd, "#sites tbody tr:nth-child(2)", "data-site"), "then the stuck row")
	require.Contains(t, wd.text(`tr[data-site="blog-3"] td.why`), "1 stuck")
	require.Equal(t, "2", wd.text(`tr[data-site="blog-2"] td.buried`))
	require.Contains(t, wd.text("#sites-summary"), "1 unreachable")
	shot := wd.screenshot(screenshotDir(), "dashboard-sites.png")
	t.Logf("screenshot of the all-sites overview: %s", shot)
	if dir := docsImages(); dir != "" {
		wd.screenshot(dir, "dashboard-sites.png")
	}

	// The switcher: from the overview to blog 2's overview, then its jobs.
	wd.typeInto("#site-switch", "blog 2")
	wd.click("#site-go")
	wd.waitURL("/ui/sites/blog-2/")
	require.Equal(t, "blog 2", wd.waitText("#site-name"))
	wd.waitText("#queues")
	wd.click(`nav a[href="/ui/sites/blog-2/jobs"]`)
	wd.waitURL("/ui/sites/blog-2/jobs")
	require.Contains(t, wd.waitText("#jobs"), "send.mail")
	require.NotContains(t, wd.text("#jobs"), "import.feed")
	// From blog 2's jobs to blog 3's, by a part of its URL: the jobs page.
	wd.typeInto("#site-switch", "example.test/b/")
	wd.click("#site-go")
	wd.waitURL("/ui/sites/blog-3/jobs")
	require.Equal(t, "blog 3", wd.waitText("#site-name"))
	require.Contains(t, wd.waitText("#jobs"), "import.feed")
	require.NotContains(t, wd.text("#jobs"), "send.mail")
	wd.screenshot(screenshotDir(), "dashboard-site-jobs.png")

	// A link from the overview: blog 2's buried count opens its buried jobs.
	wd.click("#all-sites")
	wd.waitText("#sites")
	wd.click(`tr[data-site="blog-2"] td.buried a`)
	wd.waitURL("/ui/sites/blog-2/jobs?status=buried")
	require.Equal(t, 2, wd.count(`#jobs tbody tr[data-status="buried"]`))
	require.Contains(t, wd.text("#jobs"), "SMTP timeout")

	// An action on blog 4's page pauses blog 4's queue only.
	wd.open(n.srv.URL + "/ui/sites/blog-4/")
	wd.click(`tr[data-queue="default"] button.pause`)
	require.Contains(t, wd.waitText("#flash"), "Queue default paused")
	require.Equal(t, "/ui/sites/blog-4/", pathOf(t, wd.url()))
	for p, want := range map[string][]string{"wp_4_": {"default"}, "wp_": nil, "wp_2_": nil} {
		qs, err := clientstore.Of(n.clients[p]).PausedQueues(n.ctx)
		require.NoError(t, err)
		require.Equal(t, want, qs, p)
	}

	// A phone's width: neither the overview nor a site's page scrolls sideways.
	wd.resize(390, 844)
	for _, path := range []string{"/ui/", "/ui/sites/blog-2/jobs"} {
		wd.open(n.srv.URL + path)
		wd.waitText("main")
		var overflow struct{ Page, View int }
		wd.exec(`return {Page: document.documentElement.scrollWidth, View: document.documentElement.clientWidth}`, &overflow)
		require.LessOrEqual(t, overflow.Page, overflow.View, "%s scrolls sideways", path)
	}
	wd.screenshot(screenshotDir(), "dashboard-sites-mobile.png")
}

// pathOf is a URL's path.
func pathOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Path
}

// attr reads an attribute of the first element matching css.
func attr(wd *webDriver, css, name string) string {
	wd.t.Helper()
	var v string
	wd.call("GET", wd.session+"/element/"+wd.find(css)+"/attribute/"+name, nil, &v)
	return v
}
