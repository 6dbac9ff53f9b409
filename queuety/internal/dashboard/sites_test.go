package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
)

// listedSites is a dashboard.SiteSource over a list of sites, each opened
// with a queuety.SiteClients, as serve --network serves them.
type listedSites struct {
	mu    sync.Mutex
	sites []queuety.Site
	sc    *queuety.SiteClients
	opens atomic.Int64
}

func newListedSites(t *testing.T, sites []queuety.Site) *listedSites {
	sc := queuety.NewSiteClients(queuety.SiteClientsConfig{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = sc.Close() })
	return &listedSites{sites: sites, sc: sc}
}

func (l *listedSites) List() []dashboard.SiteInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]dashboard.SiteInfo, len(l.sites))
	for i, s := range l.sites {
		out[i] = dashboard.SiteInfo{Name: s.Name, URL: s.URL, Dir: s.Dir}
	}
	return out
}

func (l *listedSites) Open(ctx context.Context, name string) (dashboard.Site, error) {
	l.opens.Add(1)
	l.mu.Lock()
	var site *queuety.Site
	for i := range l.sites {
		if l.sites[i].Name == name {
			site = &l.sites[i]
		}
	}
	l.mu.Unlock()
	if site == nil {
		return dashboard.Site{}, errors.New("no such site")
	}
	c, err := l.sc.Client(ctx, *site)
	if err != nil {
		return dashboard.Site{}, err
	}
	return dashboard.Site{Client: c}, nil
}

// network is a multisite network of three subsites beside its main site,
// every site's Queuety tables made, and one single site in a database of
// its own, the dashboard of all five on an httptest server.
type network struct {
	t       *testing.T
	ctx     context.Context
	dsn     string
	other   string // the single site's database
	clients map[string]*queuety.Client
	sites   *listedSites
	d       *dashboard.Dashboard
	srv     *httptest.Server
}

func newNetwork(t *testing.T, mutate func(*dashboard.Config)) *network {
	t.Helper()
	ctx := context.Background()
	n := &network{t: t, ctx: ctx, dsn: testdb.New(t), clients: map[string]*queuety.Client{}}
	testdb.Multisite(t, n.dsn, "wp_", "/a/", "/b/", "/c/")
	base := queuety.Config{DSN: n.dsn, TablePrefix: "wp_", RescueSchedule: "off", Logger: slog.New(slog.DiscardHandler)}
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_"} {
		cfg := base
		cfg.TablePrefix = p
		n.clients[p] = openMigrated(t, cfg)
	}
	sites, err := queuety.NetworkSites(base)(ctx)
	require.NoError(t, err)
	require.Len(t, sites, 4)
	otherDSN := testdb.New(t)
	cfg, err := mysql.ParseDSN(otherDSN)
	require.NoError(t, err)
	n.other = cfg.DBName
	single := base
	single.DSN = otherDSN
	n.clients["shop"] = openMigrated(t, single)
	sites = append(sites, queuety.Site{Name: "/var/www/shop/wp-config.php", Dir: "/var/www/shop", Config: single})
	n.sites = newListedSites(t, sites)
	dcfg := dashboard.Config{Sites: n.sites, OperatorToken: operatorToken, OverviewTTL: time.Nanosecond}
	if mutate != nil {
		mutate(&dcfg)
	}
	n.d, err = dashboard.New(dcfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", n.d)
	n.srv = httptest.NewServer(mux)
	t.Cleanup(n.srv.Close)
	return n
}

func openMigrated(t *testing.T, cfg queuety.Config) *queuety.Client {
	t.Helper()
	c, err := queuety.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(context.Background())
	require.NoError(t, err)
	return c
}

// jobs dispatches n jobs of handler to the site of prefix, returning their ids.
func (n *network) jobs(prefix, handler string, count int) []int64 {
	n.t.Helper()
	var ids []int64
	for i := range count {
		d, err := n.clients[prefix].Dispatch(n.ctx, handler, map[string]any{"i": i})
		require.NoError(n.t, err)
		ids = append(ids, d.ID)
	}
	return ids
}

// set changes a job row of the site of prefix as a worker would leave it.
func (n *network) set(prefix string, id int64, assignments string) {
	n.t.Helper()
	c := n.clients[prefix]
	_, err := clientstore.Of(c).DB().ExecContext(n.ctx, "UPDATE `"+clientstore.Of(c).Tables()["jobs"]+"` SET "+assignments+" WHERE id = ?", id)
	require.NoError(n.t, err)
}

var siteRowRE = regexp.MustCompile(`(?s)<tr data-site="([^"]+)" data-level="(\d)">(.*?)</tr>`)

// siteRow is one line of the all-sites overview, by cell class.
type siteRow struct {
	key, level string
	cells      map[string]string
}

var cellRE = regexp.MustCompile(`(?s)<td class="(?:n )?([a-z]+)"[^>]*>(.*?)</td>`)
var tagRE = regexp.MustCompile(`<[^>]+>`)

func siteRows(t *testing.T, body string) []siteRow {
	t.Helper()
	var rows []siteRow
	for _, m := range siteRowRE.FindAllStringSubmatch(body, -1) {
		r := siteRow{key: m[1], level: m[2], cells: map[string]string{}}
		for _, c := range cellRE.FindAllStringSubmatch(m[3], -1) {
			r.cells[c[1]] = strings.TrimSpace(tagRE.ReplaceAllString(c[2], ""))
		}
		rows = append(rows, r)
	}
	return rows
}

// The all-sites overview of a three-subsite network and a single site:
// each site's counts by status, its stuck rows by its stale timeout and
// its oldest due pending job, the sites that need attention first; a
// dropped database shows as unreachable with the server's reason while
// the others are still counted; each row links into its site's pages.
func TestDashboardSitesOverview(t *testing.T) {
	t.Parallel()
	n := newNetwork(t, nil)
	n.jobs("wp_", "report.build", 2) // blog 1: two due pending jobs, just dispatched
	b2 := n.jobs("wp_2_", "send.mail", 3)
	n.set("wp_2_", b2[0], "status = 'buried', failed_at = NOW()")
	n.set("wp_2_", b2[1], "status = 'failed', failed_at = NOW()")
	b3 := n.jobs("wp_3_", "import.feed", 2)
	n.set("wp_3_", b3[0], "status = 'processing', reserved_at = NOW() - INTERVAL 20 MINUTE") // past the 10 min stale timeout
	n.set("wp_3_", b3[1], "status = 'processing', reserved_at = NOW()")
	b4 := n.jobs("wp_4_", "resize.image", 1)
	n.set("wp_4_", b4[0], "available_at = NOW() - INTERVAL 2 HOUR") // waited two hours
	n.jobs("shop", "order.sync", 1)

	b := newBrowser(t, n.srv.URL)
	b.login()
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	rows := siteRows(t, body)
	require.Len(t, rows, 5)
	var order []string
	byKey := map[string]siteRow{}
	for _, r := range rows {
		order = append(order, r.key)
		byKey[r.key] = r
	}
	require.Equal(t, []string{"blog-3", "blog-2", "blog-4", "shop", "blog-1"}, order, "stuck, then failures, then a backlog, then by name")
	cells := func(key string) [4]string {
		c := byKey[key].cells
		return [4]string{c["pending"], c["processing"], c["failed"], c["buried"]}
	}
	require.Equal(t, [4]string{"2", "0", "0", "0"}, cells("blog-1"))
	require.Equal(t, [4]string{"1", "0", "1", "1"}, cells("blog-2"))
	require.Equal(t, [4]string{"0", "2", "0", "0"}, cells("blog-3"))
	require.Equal(t, "1", byKey["blog-3"].cells["stale"])
	require.Equal(t, "0", byKey["blog-2"].cells["stale"])
	require.Contains(t, byKey["blog-3"].cells["why"], "1 stuck")
	require.Contains(t, byKey["blog-2"].cells["why"], "1 buried")
	require.Contains(t, byKey["blog-4"].cells["why"], "backlog 2h0m")
	require.True(t, strings.HasPrefix(byKey["blog-4"].cells["oldest"], "2h0m"), byKey["blog-4"].cells["oldest"])
	require.Equal(t, "–", byKey["blog-1"].cells["why"], "nothing to see")
	require.Contains(t, body, `<a href="/ui/sites/blog-2/jobs?status=buried">1</a>`, "a count links to its site's list")
	require.Contains(t, body, `<a href="/ui/sites/shop/">/var/www/shop/wp-config.php</a>`)
	require.Contains(t, body, `<small>example.test/a/</small>`, "a subsite's URL beside its name")
	require.Contains(t, body, `<strong>1</strong> with stuck rows`)

	// Filter and order.
	_, body = b.do("GET", "/ui/?q=EXAMPLE.TEST/B&sort=name", nil)
	rows = siteRows(t, body)
	require.Len(t, rows, 1)
	require.Equal(t, "blog-3", rows[0].key)
	_, body = b.do("GET", "/ui/?show=attention&sort=pending", nil)
	order = nil
	for _, r := range siteRows(t, body) {
		order = append(order, r.key)
	}
	require.Equal(t, []string{"blog-2", "blog-4", "blog-3"}, order, "the sites needing attention, most pending first")
	resp, body = b.do("GET", "/ui/?sort=size", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "Unknown order")

	// The single site's database is dropped: it is unreachable, with the
	// server's reason, first; the network's sites are still counted.
	admin, err := sqlx.Open("mysql", testdb.ServerDSN())
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.Exec("DROP DATABASE `" + n.other + "`")
	require.NoError(t, err)
	resp, body = b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rows = siteRows(t, body)
	require.Equal(t, "shop", rows[0].key, "unreachable first")
	require.Equal(t, "4", rows[0].level)
	require.Contains(t, rows[0].cells["why"], "unreachable")
	require.Contains(t, rows[0].cells["why"], n.other, "the server's reason names the database")
	for _, r := range rows[1:] {
		require.NotContains(t, r.cells["why"], "unreachable", r.key)
	}
	require.Equal(t, [4]string{"1", "0", "1", "1"}, func() [4]string {
		for _, r := range rows {
			byKey[r.key] = r
		}
		return cells("blog-2")
	}())
	// Its pages say why they cannot be shown; the others work.
	resp, body = b.do("GET", "/ui/sites/shop/jobs", nil)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
	resp, _ = b.do("GET", "/ui/sites/blog-2/jobs", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// Every page of a site is under /ui/sites/<key>/, reads and acts on that
// site's tables only; an unknown key is a 404 with the reason; a single
// site's path is no page; the switcher goes to the site named, on the
// same page.
func TestDashboardSiteRouting(t *testing.T) {
	t.Parallel()
	n := newNetwork(t, nil)
	one := n.jobs("wp_", "report.build", 1)
	two := n.jobs("wp_2_", "send.mail", 2)
	b := newBrowser(t, n.srv.URL)
	b.login()

	resp, body := b.do("GET", "/ui/sites/blog-2/jobs", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	for _, id := range two {
		require.Contains(t, body, fmt.Sprintf(`<a href="/ui/sites/blog-2/jobs/%d">`, id))
	}
	require.NotContains(t, body, "report.build", "blog 1's job is not blog 2's")
	require.Contains(t, body, `<span class="site" id="site-name" title="example.test/a/">blog 2</span>`)
	require.Contains(t, body, `<option value="/var/www/shop/wp-config.php">`, "the switcher lists every site")
	require.Contains(t, body, `action="/ui/sites/blog-2/jobs/bulk"`, "its forms post to its own routes")
	resp, body = b.do("GET", fmt.Sprintf("/ui/sites/blog-1/jobs/%d", one[0]), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "report.build")

	// An action on blog 2 pauses blog 2's queue, not blog 1's.
	csrf := b.csrf("/ui/sites/blog-2/")
	resp, _ = b.do("POST", "/ui/sites/blog-2/queues/pause", url.Values{"csrf": {csrf}, "queue": {"default"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/ui/sites/blog-2/?flash="), resp.Header.Get("Location"))
	paused := func(prefix string) []string {
		qs, err := clientstore.Of(n.clients[prefix]).PausedQueues(n.ctx)
		require.NoError(t, err)
		return qs
	}
	require.Equal(t, []string{"default"}, paused("wp_2_"))
	require.Empty(t, paused("wp_"))
	// A bulk bury on blog 2 by id touches blog 2's row only, even with an
	// id that is also one of blog 1's.
	resp, _ = b.do("POST", "/ui/sites/blog-2/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"bury"}, "scope": {"selected"}, "id": {fmt.Sprint(one[0])}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st := func(prefix string, id int64) string {
		j, err := n.clients[prefix].Job(n.ctx, id)
		require.NoError(t, err)
		return j.Status
	}
	require.Equal(t, "buried", st("wp_2_", one[0]), "the same id on blog 2")
	require.Equal(t, "pending", st("wp_", one[0]))

	resp, body = b.doHTML("GET", "/ui/sites/blog-9/jobs")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, body, "No site &#34;blog-9&#34; here")
	require.Contains(t, body, `<a href="/ui/">Back to the overview</a>`)
	resp, body = b.do("GET", "/ui/jobs", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a single site's path is no page here")
	require.Contains(t, body, "No page GET /ui/jobs")
	resp, _ = b.do("GET", "/ui/sites/blog-2", nil)
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui/sites/blog-2/", resp.Header.Get("Location"))
	// Without a login, a site's page sends to the login page and back.
	anon := newBrowser(t, n.srv.URL)
	resp, _ = anon.do("GET", "/ui/sites/blog-2/jobs", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/ui/login?next="+url.QueryEscape("/ui/sites/blog-2/jobs"), resp.Header.Get("Location"))
	resp, _ = anon.do("GET", "/ui/sites/blog-9/jobs", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "an unknown key is not told to a visitor who is not logged in")
	resp, _ = anon.do("POST", "/ui/sites/blog-2/queues/pause", url.Values{"queue": {"default"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = b.do("POST", "/ui/sites/blog-1/queues/pause", url.Values{"queue": {"default"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the form token is still required")
	require.Empty(t, paused("wp_"))

	// The switcher: a name, a key, a unique part of a name or URL, or
	// what --site takes (a URL with its scheme, a directory); the page
	// kept.
	for q, want := range map[string]string{
		"blog 3":                      "/ui/sites/blog-3/jobs",
		"blog-4":                      "/ui/sites/blog-4/jobs",
		"shop":                        "/ui/sites/shop/jobs",
		"example.test/c/":             "/ui/sites/blog-4/jobs",
		"/var/www/shop/wp-config.php": "/ui/sites/shop/jobs",
		"https://Example.test/c":      "/ui/sites/blog-4/jobs",
		"/var/www/shop":               "/ui/sites/shop/jobs",
	} {
		resp, _ = b.do("GET", "/ui/site?"+url.Values{"site": {q}, "page": {"jobs"}}.Encode(), nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, q)
		require.Equal(t, want, resp.Header.Get("Location"), q)
	}
	resp, _ = b.do("GET", "/ui/site?site=blog+2&page=..%2F..%2Fetc", nil)
	require.Equal(t, "/ui/sites/blog-2/", resp.Header.Get("Location"), "an unknown page is the site's overview")
	resp, _ = b.do("GET", "/ui/site?site=blog&page=jobs", nil)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/ui/", loc.Path, "several match: the overview, filtered")
	require.Equal(t, "blog", loc.Query().Get("q"))
	require.Equal(t, `4 sites match "blog": choose one.`, loc.Query().Get("flash"))
	resp, _ = b.do("GET", "/ui/site?site=nowhere", nil)
	loc, err = url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "No site's name or URL holds \"nowhere\".", loc.Query().Get("flash"))
}

// doHTML is do for a browser page (Accept: text/html), which gets the
// error page rather than a plain text answer.
func (b *browser) doHTML(method, path string) (*http.Response, string) {
	b.t.Helper()
	b.header.Set("Accept", "text/html")
	defer b.header.Del("Accept")
	return b.do(method, path, nil)
}

// hostileSites lists names built to break out of HTML, a URL or a path,
// all on one database; a hanging site never answers.
type hostileSites struct {
	names []string
	c     *queuety.Client
	opens atomic.Int64
}

func (h *hostileSites) List() []dashboard.SiteInfo {
	out := []dashboard.SiteInfo{}
	for _, n := range h.names {
		out = append(out, dashboard.SiteInfo{Name: n, URL: n + "/url"})
	}
	return out
}

func (h *hostileSites) Open(ctx context.Context, name string) (dashboard.Site, error) {
	h.opens.Add(1)
	if name == "hanging" {
		<-ctx.Done()
		return dashboard.Site{}, ctx.Err()
	}
	return dashboard.Site{Client: h.c}, nil
}

// Site names are data: escaped in every page, never a path: each gets a
// key of letters, digits and dashes (a name with none, or sharing another's
// key, has a hash added) that leads to its pages; a site that does not
// answer shows as unreachable after the site timeout; the overview's
// counts are read once a TTL, whatever the requests.
func TestDashboardHostileSiteNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	names := []string{`<script>alert(1)</script>`, `..`, `%2e%2e`, `../../ui/login?x=1#f`, `a"b'c`, `A B`, `a-b`, `/var/www/a b/wp-config.php`, "hanging"}
	src := &hostileSites{names: names, c: e.c}
	now := time.Now()
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	d, err := dashboard.New(dashboard.Config{Sites: src, OperatorToken: operatorToken, SiteTimeout: 100 * time.Millisecond,
		Now: func() time.Time { return *clock.Load() }})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", d)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv.URL)
	b.login()
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.NotContains(t, body, "<script>alert", "a name is escaped")
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, body, `a"b'c`)
	rows := siteRows(t, body)
	require.Len(t, rows, len(names))
	keys := map[string]bool{}
	keyRE := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	for _, r := range rows {
		require.Regexp(t, keyRE, r.key)
		require.False(t, keys[r.key], "key %s given twice", r.key)
		keys[r.key] = true
		if r.key == "hanging" {
			require.Contains(t, r.cells["why"], "no answer within 100ms")
			continue
		}
		resp, page := b.do("GET", "/ui/sites/"+r.key+"/", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, r.key)
		require.NotContains(t, page, "<script>alert")
	}
	for _, k := range []string{"script-alert-1-script", "a-b-c", "2e-2e", "ui-login-x-1-f", "hanging"} {
		require.True(t, keys[k], "%s in %v", k, keys)
	}
	// "A B", "a-b" and the directory "a b" share the slug a-b: each has a
	// hash of its name added; ".." has no letter: a hash alone.
	hashed := regexp.MustCompile(`^a-b-[0-9a-f]{8}$`)
	bare := regexp.MustCompile(`^[0-9a-f]{8}$`)
	nHashed, nBare := 0, 0
	for k := range keys {
		if hashed.MatchString(k) {
			nHashed++
		}
		if bare.MatchString(k) {
			nBare++
		}
	}
	require.Equal(t, 3, nHashed, "%v", keys)
	require.Equal(t, 1, nBare, "%v", keys)
	require.False(t, keys["a-b"])

	// The counts are reused until the TTL has passed.
	opens := src.opens.Load()
	_, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, opens, src.opens.Load(), "read once a TTL")
	later := now.Add(6 * time.Second)
	clock.Store(&later)
	_, _ = b.do("GET", "/ui/", nil)
	require.Equal(t, opens+int64(len(names)), src.opens.Load(), "read again after it")
}

// A server that does not answer the overview's statement within the site
// timeout (a table locked here) has its sites shown unreachable, and is
// not asked again for 30 s: answering again meanwhile changes nothing,
// after that its counts are back.
func TestDashboardSilentServer(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	n := newNetwork(t, func(c *dashboard.Config) {
		c.SiteTimeout = 300 * time.Millisecond
		c.Now = func() time.Time { return *clock.Load() }
	})
	n.jobs("wp_2_", "send.mail", 3)
	b := newBrowser(t, n.srv.URL)
	b.login()
	_, body := b.do("GET", "/ui/", nil)
	require.Len(t, siteRows(t, body), 5)

	// Another session holds blog 2's jobs table: the server's statement waits.
	lock, err := sqlx.Connect("mysql", n.dsn)
	require.NoError(t, err)
	defer lock.Close()
	conn, err := lock.Conn(n.ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(n.ctx, "LOCK TABLES wp_2_queuety_jobs WRITE")
	require.NoError(t, err)
	later := now.Add(time.Minute)
	clock.Store(&later)
	resp, body := b.do("GET", "/ui/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, r := range siteRows(t, body) {
		require.Contains(t, r.cells["why"], "no answer within 300ms (asked again after", r.key)
	}
	_, err = conn.ExecContext(n.ctx, "UNLOCK TABLES")
	require.NoError(t, err)
	// Within the 30 s, the server is not asked: still unreachable.
	soon := later.Add(20 * time.Second)
	clock.Store(&soon)
	_, body = b.do("GET", "/ui/", nil)
	for _, r := range siteRows(t, body) {
		require.Contains(t, r.cells["why"], "no answer within 300ms", r.key)
	}
	after := later.Add(31 * time.Second)
	clock.Store(&after)
	_, body = b.do("GET", "/ui/", nil)
	rows := siteRows(t, body)
	require.Len(t, rows, 5)
	for _, r := range rows {
		require.NotContains(t, r.cells["why"], "unreachable", r.key)
		if r.key == "blog-2" {
			require.Equal(t, "3", r.cells["pending"])
		}
	}
}
