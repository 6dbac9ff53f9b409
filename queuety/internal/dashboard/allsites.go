package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// The all-sites overview of a dashboard of many sites (Config.Sites): one
// row a site, the sites that need attention first.

// Attention levels of a site, the most urgent highest.
const (
	levelOK          = iota
	levelBacklog     // due pending jobs have waited past backlogAfter
	levelFailures    // buried or failed jobs
	levelStale       // processing rows past the site's stale timeout
	levelUnreachable // its database cannot be read
)

// backlogAfter is how long the oldest due pending job may wait before its
// site is listed as having a backlog: a worker starts a due job within a
// poll interval, so a minute is work piling up, not work arriving.
const backlogAfter = time.Minute

// Parallel reads of the all-sites overview: sites opened at once (with a
// SiteClients, the first open of each database connects), and servers
// read at once (each one statement for every 100 of its sites).
const (
	boardOpens   = 16
	boardServers = 8
)

// siteRow is one line of the all-sites overview.
type siteRow struct {
	keyedSite
	Pending, Processing, Failed, Buried, Stale int64
	// Oldest is how long the oldest due pending job has waited (HasOldest
	// false: none is due).
	Oldest    time.Duration
	HasOldest bool
	// Err is why the site cannot be read ("" when it answered).
	Err   string
	Level int
	// Why says what needs attention.
	Why []reason
}

// reason is one thing a site needs attention for, at its level.
type reason struct {
	Text  string
	Level int
}

// More reports a count read up to store.SiteCountsCap.
func (r siteRow) More(n int64) bool { return n > store.SiteCountsCap }

// Capped is n as the page shows it (at most the cap).
func (r siteRow) Capped(n int64) int64 { return min(n, store.SiteCountsCap) }

// judge sets the row's attention level and reasons.
func (r *siteRow) judge() {
	r.Why = nil
	add := func(level int, why string) {
		r.Level = max(r.Level, level)
		r.Why = append(r.Why, reason{why, level})
	}
	if r.Err != "" {
		add(levelUnreachable, "unreachable")
		return
	}
	if r.Stale > 0 {
		add(levelStale, fmt.Sprintf("%d stuck", r.Capped(r.Stale)))
	}
	if r.Buried > 0 {
		add(levelFailures, fmt.Sprintf("%d buried", r.Capped(r.Buried)))
	}
	if r.Failed > 0 {
		add(levelFailures, fmt.Sprintf("%d failed", r.Capped(r.Failed)))
	}
	if r.HasOldest && r.Oldest >= backlogAfter {
		add(levelBacklog, "backlog "+r.Oldest.Round(time.Second).String())
	}
}

// boardCache is the last read of every site's row, and the servers that
// did not answer within the timeout lately.
type boardCache struct {
	mu   sync.Mutex
	at   time.Time
	rows []siteRow
	// silent are servers whose statement timed out: their sites are shown
	// unreachable without asking them again until the time kept, so a
	// server that does not answer costs a page the timeout once a
	// serverBackoff, not at every read.
	silent map[string]silentServer
}

// silentServer is a server that did not answer: why, and until when it is
// not asked.
type silentServer struct {
	why   string
	until time.Time
}

// serverBackoff is how long a server that did not answer within the
// timeout is not asked again.
const serverBackoff = 30 * time.Second

// board returns every listed site's row, read again when the last read is
// older than OverviewTTL. Concurrent requests wait for one read.
func (d *Dashboard) board(ctx context.Context) ([]siteRow, time.Time) {
	c := &d.boardRead
	c.mu.Lock()
	defer c.mu.Unlock()
	now := d.cfg.Now()
	idx := d.keyed()
	if c.rows != nil && now.Sub(c.at) < d.cfg.OverviewTTL && sameSites(c.rows, idx.list) {
		return c.rows, c.at
	}
	// The read is shared by every tab: one whose request ends must not
	// cut it short; SiteTimeout bounds its opens, and then its reads.
	c.rows, c.at = d.readBoard(context.WithoutCancel(ctx), idx.list, c), now
	return c.rows, c.at
}

func sameSites(rows []siteRow, list []keyedSite) bool {
	return slices.EqualFunc(rows, list, func(r siteRow, k keyedSite) bool { return r.keyedSite == k })
}

// boardSite is a site the overview opened, with what its read needs.
type boardSite struct {
	row    *siteRow
	st     *store.Store
	server string // its server (DSN without the database): one statement each
	db     string // its database, which names its tables in that statement
	stale  time.Duration
}

// readBoard opens every site, then reads the sites of each server in one
// statement (every 100 sites), the servers in parallel, each phase within
// SiteTimeout; c.silent is read and kept up to date (c.mu held).
func (d *Dashboard) readBoard(ctx context.Context, list []keyedSite, c *boardCache) []siteRow {
	rows := make([]siteRow, len(list))
	for i, k := range list {
		rows[i].keyedSite = k
	}
	servers, byServer := d.openBoard(ctx, rows)
	d.countBoard(ctx, servers, byServer, c)
	for i := range rows {
		rows[i].judge()
	}
	return rows
}

// openBoard opens the site of each row, at most boardOpens at once, and
// groups those it could by server (in the order first met); a site that
// could not be opened has its row's Err set.
func (d *Dashboard) openBoard(ctx context.Context, rows []siteRow) ([]string, map[string][]*boardSite) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SiteTimeout)
	defer cancel()
	opened := make([]*boardSite, len(rows))
	var wg sync.WaitGroup
	sem := make(chan struct{}, boardOpens)
	for i := range rows {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := d.cfg.Sites.Open(ctx, rows[i].Name)
			if err != nil {
				rows[i].Err = errorText(err, d.cfg.SiteTimeout)
				return
			}
			cfg := v.Client.Config()
			server, db, err := store.ServerOf(cfg.DSN)
			if err != nil {
				rows[i].Err = errorText(err, d.cfg.SiteTimeout)
				return
			}
			opened[i] = &boardSite{row: &rows[i], st: clientstore.Of(v.Client), server: server, db: db,
				stale: cmp.Or(cfg.StaleTimeout, queuety.DefaultStaleTimeout)}
		}()
	}
	wg.Wait()
	byServer := map[string][]*boardSite{}
	var servers []string
	for _, b := range opened {
		if b == nil {
			continue
		}
		if _, ok := byServer[b.server]; !ok {
			servers = append(servers, b.server)
		}
		byServer[b.server] = append(byServer[b.server], b)
	}
	return servers, byServer
}

// countBoard reads the counts of each server's sites, at most
// boardServers at once, within a SiteTimeout of its own (a server that
// took the opens' time must not leave the reads none). A server that
// does not answer within it is kept in c.silent for serverBackoff.
func (d *Dashboard) countBoard(ctx context.Context, servers []string, byServer map[string][]*boardSite, c *boardCache) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SiteTimeout)
	defer cancel()
	now := d.cfg.Now()
	timedOut := make([]bool, len(servers))
	var wg sync.WaitGroup
	sem := make(chan struct{}, boardServers)
	for i, server := range servers {
		if s, ok := c.silent[server]; ok && now.Before(s.until) {
			for _, b := range byServer[server] {
				b.row.Err = s.why
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.countSites(ctx, byServer[server])
			timedOut[i] = ctx.Err() != nil
		}()
	}
	wg.Wait()
	for i, server := range servers {
		switch {
		case timedOut[i]:
			if c.silent == nil {
				c.silent = map[string]silentServer{}
			}
			until := now.Add(serverBackoff)
			why := fmt.Sprintf("no answer within %s (asked again after %s UTC)", d.cfg.SiteTimeout, until.UTC().Format(time.TimeOnly))
			c.silent[server] = silentServer{until: until, why: why}
			for _, b := range byServer[server] {
				b.row.Err = why
			}
			d.log.Warn("dashboard: a database server did not answer the all-sites overview in time; its sites are shown unreachable", "sites", len(byServer[server]), "timeout", d.cfg.SiteTimeout, "again_after", serverBackoff)
		case now.After(c.silent[server].until):
			delete(c.silent, server)
		}
	}
}

// countSites reads the rows of sites on one server in one statement, on
// the first site's connection, each table named with its database. When
// it fails (a database dropped, a site's table missing), the server's
// databases are read apart, then a failing database's sites one by one,
// so a broken site marks only itself unreachable.
func (d *Dashboard) countSites(ctx context.Context, sites []*boardSite) {
	looks := make([]store.SiteCountsLook, len(sites))
	for i, b := range sites {
		looks[i] = store.SiteCountsLook{SiteTables: store.SiteTables{Store: b.st, Database: b.db}, StaleBefore: b.st.Now().Add(-b.stale)}
	}
	counts, err := store.SiteCountsAcross(ctx, sites[0].st.DB(), looks)
	if err == nil {
		for i, b := range sites {
			c := counts[i]
			b.row.Pending, b.row.Processing, b.row.Failed, b.row.Buried, b.row.Stale = c.Pending, c.Processing, c.Failed, c.Buried, c.Stale
			b.row.Oldest, b.row.HasOldest = time.Duration(c.OldestPending.Int64)*time.Second, c.OldestPending.Valid
		}
		return
	}
	if len(sites) == 1 || ctx.Err() != nil {
		// The statement's name and site count are the log's; the page says
		// what the server answered.
		if u := errors.Unwrap(err); u != nil && ctx.Err() == nil {
			err = u
		}
		d.log.Warn("dashboard: a site's counts cannot be read", "site", sites[0].row.Name, "sites", len(sites), "err", err)
		for _, b := range sites {
			b.row.Err = errorText(err, d.cfg.SiteTimeout)
		}
		return
	}
	byDB := map[string][]*boardSite{}
	var dbs []string
	for _, b := range sites {
		if _, ok := byDB[b.db]; !ok {
			dbs = append(dbs, b.db)
		}
		byDB[b.db] = append(byDB[b.db], b)
	}
	if len(dbs) > 1 {
		for _, db := range dbs {
			d.countSites(ctx, byDB[db])
		}
		return
	}
	for _, b := range sites {
		d.countSites(ctx, []*boardSite{b})
	}
}

// errorText is what the page says of a site that cannot be read.
func errorText(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	return truncate(err.Error(), 240)
}

// boardCols are the all-sites overview's columns, each an order: by
// attention (the default), the counts largest first, the name
// alphabetical.
var boardCols = []struct{ key, label string }{
	{"name", "Site"}, {"attention", "Needs attention"}, {"pending", "Pending"}, {"processing", "Processing"},
	{"failed", "Failed"}, {"buried", "Buried"}, {"stale", "Stuck"}, {"oldest", "Oldest pending"},
}

// boardCol is a column head: its label and the link that sorts by it.
type boardCol struct {
	Label, Href string
	On, Num     bool
}

// boardData is the all-sites overview page.
type boardData struct {
	Rows                         []siteRow
	Sites                        int // every listed site, filtered or not
	Unreachable, Stuck, Failures int
	Backlog, Fine                int
	Q, Sort, Show                string
	ReadAt                       time.Time
	TTL                          time.Duration
	Cols                         []boardCol
	Cap                          int
}

// sitesOverview is GET /ui/ of a dashboard of many sites: q filters by
// name or URL, show=attention keeps the sites that need it, sort orders.
func (d *Dashboard) sitesOverview(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	data := boardData{Q: strings.TrimSpace(qv.Get("q")), Sort: qv.Get("sort"), Show: qv.Get("show"), TTL: d.cfg.OverviewTTL, Cap: store.SiteCountsCap}
	if data.Sort == "" {
		data.Sort = "attention"
	}
	keep := url.Values{}
	for k, v := range map[string]string{"q": data.Q, "show": data.Show} {
		if v != "" {
			keep.Set(k, v)
		}
	}
	var sorts []string
	for _, c := range boardCols {
		keep.Set("sort", c.key)
		data.Cols = append(data.Cols, boardCol{Label: c.label, Href: Prefix + "?" + keep.Encode(), On: c.key == data.Sort,
			Num: c.key != "name" && c.key != "attention"})
		sorts = append(sorts, c.key)
	}
	if !slices.Contains(sorts, data.Sort) {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown order %s (%s).", store.QuotePrefix(data.Sort, 40), strings.Join(sorts, ", ")))
		return
	}
	if data.Show != "" && data.Show != "attention" {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown choice show=%s (attention, or none for every site).", store.QuotePrefix(data.Show, 40)))
		return
	}
	all, at := d.board(r.Context())
	data.ReadAt, data.Sites = at, len(all)
	for _, row := range all {
		switch row.Level {
		case levelUnreachable:
			data.Unreachable++
		case levelStale:
			data.Stuck++
		case levelFailures:
			data.Failures++
		case levelBacklog:
			data.Backlog++
		default:
			data.Fine++
		}
		if data.Show == "attention" && row.Level == levelOK {
			continue
		}
		if data.Q != "" && !matchesSite(row.keyedSite, data.Q) {
			continue
		}
		data.Rows = append(data.Rows, row)
	}
	sortBoard(data.Rows, data.Sort)
	d.render(w, r, http.StatusOK, "sites", view{Title: "All sites", Nav: "sites", Data: data})
}

// matchesSite: q in the site's name or URL, any case.
func matchesSite(k keyedSite, q string) bool {
	q = strings.ToLower(q)
	return strings.Contains(strings.ToLower(k.Name), q) || strings.Contains(strings.ToLower(k.URL), q)
}

func sortBoard(rows []siteRow, by string) {
	count := map[string]func(siteRow) int64{
		"pending":    func(r siteRow) int64 { return r.Pending },
		"processing": func(r siteRow) int64 { return r.Processing },
		"failed":     func(r siteRow) int64 { return r.Failed },
		"buried":     func(r siteRow) int64 { return r.Buried },
		"stale":      func(r siteRow) int64 { return r.Stale },
		"oldest":     func(r siteRow) int64 { return int64(r.Oldest) },
	}
	slices.SortStableFunc(rows, func(a, b siteRow) int {
		switch by {
		case "attention":
			if c := cmp.Compare(b.Level, a.Level); c != 0 {
				return c
			}
			if c := cmp.Compare(urgency(b), urgency(a)); c != 0 {
				return c
			}
		case "name":
		default:
			if c := cmp.Compare(count[by](b), count[by](a)); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// urgency orders the sites of one attention level: by what put them there.
func urgency(r siteRow) int64 {
	switch r.Level {
	case levelStale:
		return r.Stale
	case levelFailures:
		return r.Buried + r.Failed
	case levelBacklog:
		return int64(r.Oldest)
	}
	return 0
}

// switchPages are the pages the site switcher keeps when it goes to
// another site: the list it was on (a job's page goes to the jobs list).
var switchPages = map[string]string{
	"overview": "", "jobs": "jobs", "workflows": "workflows", "schedules": "schedules",
	"batches": "batches", "machines": "machines", "webhooks": "webhooks", "workers": "workers",
}

// switchSite is GET /ui/site?site=…&page=…, the site switcher: the site
// named (as --site names it: queuety.SitesNamed; or its key), else the one
// site whose name or URL holds the text, on the same page; with none or
// several, the all-sites overview filtered by the text.
func (d *Dashboard) switchSite(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("site"))
	page := switchPages[r.URL.Query().Get("page")]
	idx := d.keyed()
	sites := make([]queuety.Site, len(idx.list))
	for i, k := range idx.list {
		sites[i] = queuety.Site{Name: k.Name, URL: k.URL, Dir: k.Dir}
	}
	if named := queuety.SitesNamed(sites, q); len(named) == 1 {
		http.Redirect(w, r, idx.byName[named[0].Name].Base+page, http.StatusSeeOther)
		return
	}
	if k, ok := idx.byKey[q]; ok {
		http.Redirect(w, r, k.Base+page, http.StatusSeeOther)
		return
	}
	var found []keyedSite
	for _, k := range idx.list {
		if q != "" && matchesSite(k, q) {
			found = append(found, k)
		}
	}
	if len(found) == 1 {
		http.Redirect(w, r, found[0].Base+page, http.StatusSeeOther)
		return
	}
	to := Prefix
	msg := "Choose a site: type a part of its name or URL."
	if q != "" {
		to += "?" + url.Values{"q": {q}}.Encode()
		msg = fmt.Sprintf("%d sites match %q: choose one.", len(found), q)
		if len(found) == 0 {
			msg = fmt.Sprintf("No site's name or URL holds %q.", q)
		}
	}
	d.done(w, r, to, msg)
}
