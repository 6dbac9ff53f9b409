package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// Prefix is where the dashboard is mounted.
const Prefix = "/ui/"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config configures a Dashboard.
type Config struct {
	// Client reads the tables and carries out every action. Required
	// unless Sites is set.
	Client *queuety.Client
	// Registry holds the handlers workflow lifecycle actions may need
	// (a cancel handler, a resumed step); nil is an empty registry.
	Registry *queuety.Registry
	// OperatorToken is the HTTP API's operator token: it logs in. Required
	// unless InsecureNoAuth.
	OperatorToken string
	// InsecureNoAuth serves the dashboard without a login (the HTTP API
	// allows that on a loopback address only).
	InsecureNoAuth bool
	// ReadOnly shows everything and refuses every action.
	ReadOnly bool
	// Namespace is whose worker registrations are shown ("" = default).
	Namespace string
	// PoolStats, when set, reports the PHP pool of this process.
	PoolStats func() phppool.Stats
	// WebhookDeliveries, when set, reports what this process's worker
	// sent to each webhook (Worker.WebhookDeliveries). Nil: this process
	// runs no worker and sends none (serve).
	WebhookDeliveries func() []queuety.WebhookDelivery
	// Sites, when set, makes this a dashboard of many sites (Client,
	// Registry, PoolStats and WebhookDeliveries are then each site's, from
	// Sites.Open): /ui/ is the all-sites overview, and every page of a
	// site is under /ui/sites/<key>/, with a site switcher on every page.
	Sites SiteSource
	// SiteTimeout bounds the wait for one site's database with Sites
	// (default 3 s): opening it, and the all-sites overview's reads of its
	// server. A site that does not answer within it shows as unreachable.
	SiteTimeout time.Duration
	// OverviewTTL is how long the all-sites overview's counts are reused
	// (default 5 s): every open tab refreshes itself every 5 s, and the
	// counts of hundreds of sites are read for them once.
	OverviewTTL time.Duration
	// SessionTTL is how long a login lasts (default 12 h).
	SessionTTL time.Duration
	Logger     *slog.Logger
	// Now is the clock of sessions and "ago" labels (default time.Now).
	Now func() time.Time
}

// Dashboard serves /ui/.
type Dashboard struct {
	cfg     Config
	log     *slog.Logger
	pages   map[string]*template.Template
	auth    *auth
	handler http.Handler
	// one is the site of a single-site dashboard (nil with Config.Sites).
	one *site
	// With Config.Sites: each site's throughput cache, and the all-sites
	// overview's.
	tpCaches
	boardRead boardCache
}

// New checks cfg, parses the templates and builds the handler.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil && cfg.Sites == nil {
		return nil, errors.New("dashboard: Config.Client (one site) or Config.Sites (many) is required")
	}
	cfg.OperatorToken = strings.TrimSpace(cfg.OperatorToken)
	if !cfg.InsecureNoAuth && cfg.OperatorToken == "" {
		return nil, errors.New("dashboard: an operator token is required to log in (or no auth on a loopback address)")
	}
	if cfg.Registry == nil {
		cfg.Registry = queuety.NewRegistry()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SiteTimeout <= 0 {
		cfg.SiteTimeout = 3 * time.Second
	}
	if cfg.OverviewTTL <= 0 {
		cfg.OverviewTTL = 5 * time.Second
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	a, err := newAuth(cfg.OperatorToken, cfg.InsecureNoAuth, cfg.SessionTTL, cfg.Now)
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, pages: pages, auth: a, tpCaches: tpCaches{tps: map[string]*throughputCache{}}}
	if cfg.Sites == nil {
		d.one = &site{Site: Site{Client: cfg.Client, Registry: cfg.Registry, PoolStats: cfg.PoolStats, WebhookDeliveries: cfg.WebhookDeliveries},
			base: Prefix, tp: &throughputCache{}}
	}
	d.routes()
	return d, nil
}

// ServeHTTP serves the dashboard's paths (mount it at Prefix).
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.handler.ServeHTTP(w, r) }

func (d *Dashboard) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/login", d.loginPage)
	mux.HandleFunc("POST /ui/login", d.login)
	mux.HandleFunc("POST /ui/logout", d.logout)

	page := func(h siteHandler) http.Handler { return d.auth.page(d.onSite(h)) }
	act := func(h siteHandler) http.Handler { return d.auth.action(d.cfg.ReadOnly, d.onSite(h)) }
	// A site's pages: under /ui/ for the one site, under /ui/sites/<key>/
	// for each of many (the key is letters, digits and dashes: siteKeys).
	root := Prefix
	if d.cfg.Sites != nil {
		root = sitesPrefix + "{site}/"
		mux.Handle("GET /ui/{$}", d.auth.page(http.HandlerFunc(d.sitesOverview)))
		mux.Handle("GET /ui/site", d.auth.page(http.HandlerFunc(d.switchSite)))
		mux.Handle("GET "+sitesPrefix+"{site}", d.auth.page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
		})))
	}
	mux.Handle("GET "+root+"{$}", page(d.overview))
	mux.Handle("GET "+root+"jobs", page(d.jobs))
	mux.Handle("GET "+root+"jobs/{id}", page(d.job))
	mux.Handle("GET "+root+"workflows", page(d.workflows))
	mux.Handle("GET "+root+"workflows/{id}", page(d.workflow))
	mux.Handle("GET "+root+"schedules", page(d.schedules))
	mux.Handle("GET "+root+"batches", page(d.batches))
	mux.Handle("GET "+root+"batches/{id}", page(d.batch))
	mux.Handle("GET "+root+"machines", page(d.machines))
	mux.Handle("GET "+root+"machines/{id}", page(d.machine))
	mux.Handle("GET "+root+"webhooks", page(d.webhooks))
	mux.Handle("GET "+root+"workers", page(d.workers))
	// A queue name is data: the overview's forms post it in a field to a
	// fixed route, never in the path, where a name like
	// "../workflows/7/approve?" or ".." would be resolved by the browser
	// into another route (N1). The one-segment route stays for scripts
	// using the bearer token; its segment is decoded once ("a%2Fb" is the
	// queue a%2Fb only when sent as a%252Fb).
	mux.Handle("POST "+root+"queues/{action}", act(d.queueAction))
	mux.Handle("POST "+root+queuePathRoute, act(d.queueAction))
	mux.Handle("POST "+root+"buried/retry", act(d.retryGroup))
	mux.Handle("POST "+root+"jobs/bulk", act(d.bulkJobs))
	mux.Handle("POST "+root+"workflows/bulk", act(d.bulkWorkflows))
	mux.Handle("POST "+root+"workflows/{id}/{action}", act(d.workflowAction))
	mux.Handle("POST "+root+"schedules/{id}/{action}", act(d.scheduleAction))
	mux.Handle("/ui/", d.auth.page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("No page %s %s.", r.Method, r.URL.Path))
	})))
	// Cross-site form posts are refused from the browser's own
	// Sec-Fetch-Site / Origin headers (net/http's CSRF protection); the
	// form token (auth.checkForm) covers browsers that send neither.
	cop := http.NewCrossOriginProtection()
	d.handler = securityHeaders(cop.Handler(mux))
}

// securityHeaders: no framing, scripts and fetches from the dashboard
// only, no caching of operator pages.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/ui/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	Title string
	Nav   string
	// Base is where the pages of the site shown are (links are made from
	// it): Prefix, or /ui/sites/<key>/ on a dashboard of many sites.
	Base     string
	CSRF     string
	ReadOnly bool
	LoggedIn bool
	// Many: a dashboard of many sites. Site is the site shown (nil on the
	// all-sites pages), Switch the site switcher's choices.
	Many   bool
	Site   *keyedSite
	Switch []keyedSite
	// Live: the page refreshes itself (static/live.js) while visible;
	// every GET page but the login and error pages.
	Live  bool
	Flash string
	Error string
	Data  any
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	t, ok := d.pages[name]
	if !ok {
		panic("dashboard: no template " + name)
	}
	s := sessionOf(r)
	v.CSRF = s.csrf
	v.LoggedIn = s.ok && !d.cfg.InsecureNoAuth && !s.bearer
	v.ReadOnly = d.cfg.ReadOnly
	v.Base = Prefix
	if st := siteOf(r); st != nil {
		v.Base = st.base
		if d.cfg.Sites != nil {
			v.Site = &keyedSite{SiteInfo: SiteInfo{Name: st.name, URL: st.url}, Key: st.key, Base: st.base}
		}
	}
	if d.cfg.Sites != nil && v.Nav != "" {
		v.Many, v.Switch = true, d.keyed().list
	}
	v.Live = r.Method == http.MethodGet && v.Nav != "" && status == http.StatusOK
	if f := r.URL.Query().Get("flash"); v.Flash == "" && f != "" && d.auth.signed(r.URL.Query().Get("flash_sig"), "flash", f) {
		v.Flash = f
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		d.log.Error("dashboard: rendering", "page", name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail shows an error page (a plain text answer to a non-browser caller).
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Error(w, msg, status)
		return
	}
	d.render(w, r, status, "error", view{Title: http.StatusText(status), Error: msg})
}

// internalError logs err and shows a short error page. The page does not
// repeat err: a database error carries SQL and server details, which
// belong in the log (N13).
func (d *Dashboard) internalError(w http.ResponseWriter, r *http.Request, err error) {
	d.log.Error("dashboard: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	d.fail(w, r, http.StatusInternalServerError, "The request failed on the server; its log has the details.")
}

// done redirects after an action (post/redirect/get), with a message.
// The message travels in the URL with an HMAC, so a link made elsewhere
// cannot put words on the dashboard.
func (d *Dashboard) done(w http.ResponseWriter, r *http.Request, to, flash string) {
	if to == "" || !strings.HasPrefix(to, Prefix) || strings.HasPrefix(to, "//") {
		to = Prefix
	}
	u, err := url.Parse(to)
	if err != nil {
		u = &url.URL{Path: Prefix}
	}
	q := u.Query()
	q.Set("flash", flash)
	q.Set("flash_sig", d.auth.mac("flash", flash))
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}
