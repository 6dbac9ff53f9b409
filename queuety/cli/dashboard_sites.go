package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/dashboard"
)

// The dashboard of many sites (docs/sites.md, "Dashboard"): `work
// --network|--sites --http ADDR` shows the sites it serves, `serve
// --network|--sites` shows them without serving them.

// checkSitesHTTP refuses what the HTTP listener of many sites does not
// serve: the worker plane (external workers, worker sessions, activity
// tasks) and the operator API read one site's tables, so only the
// dashboard and the probes are served.
func checkSitesHTTP(c *cli.Context) error {
	if strings.TrimSpace(c.String("worker-token")) != "" {
		return usagef("--worker-token (QUEUETY_WORKER_TOKEN) with --network or --sites: the worker plane serves one site's tables, so the HTTP listener of many sites serves the dashboard alone; unset it")
	}
	if c.Bool("no-ui") {
		return usagef("--no-ui with --network or --sites: the HTTP listener of many sites serves the dashboard alone; drop --no-ui or the listener")
	}
	return nil
}

// sitesDashboard is the dashboard of the sites src lists.
func sitesDashboard(c *cli.Context, src dashboard.SiteSource, log *slog.Logger) (http.Handler, error) {
	d, err := dashboard.New(dashboard.Config{
		Sites:          src,
		OperatorToken:  c.String("operator-token"),
		InsecureNoAuth: c.Bool("insecure-no-auth"),
		ReadOnly:       c.Bool("ui-read-only"),
		Logger:         log,
	})
	if err != nil {
		return nil, usageError{err}
	}
	return d, nil
}

// startSitesHTTP is the HTTP listener of many sites on addr: the dashboard
// ui at /ui/ (/ and /ui lead there), GET /healthz and GET /readyz (no
// token; ready answers it).
func startSitesHTTP(ctx context.Context, c *cli.Context, addr string, ui http.Handler, ready http.Handler, log *slog.Logger) (*httpListener, error) {
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui)
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	mux.Handle("GET /healthz", httpapi.HealthHandler())
	mux.Handle("GET /readyz", ready)
	var h http.Handler = mux
	if c.Bool("insecure-no-auth") {
		h = httpapi.LocalHostGuard(addr, h)
	}
	l, err := startHTTPListener(ctx, addr, &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}, log, "http server")
	if err != nil {
		return nil, err
	}
	if !httpapi.Loopback(addr) {
		log.Warn("serving plain HTTP on a non-loopback address: the operator token and the pages cross the network unencrypted; put a TLS-terminating proxy in front, or listen on 127.0.0.1", "listen", addr)
	}
	return l, nil
}

// servedSites is the dashboard's view of the sites `work --network|--sites`
// serves: each running site's Client and worker (SitesConfig.Started,
// Stopped), its handlers (SitesConfig.Registry) and its PHP pool.
type servedSites struct {
	sites *queuety.Sites
	pools *sitePools

	mu   sync.Mutex
	regs map[string]*queuety.Registry
	dirs map[string]string // a single site's directory, for the switcher
	run  map[string]servedSite
}

type servedSite struct {
	client *queuety.Client
	worker *queuety.Worker
}

func newServedSites(pools *sitePools) *servedSites {
	return &servedSites{pools: pools, regs: map[string]*queuety.Registry{}, dirs: map[string]string{}, run: map[string]servedSite{}}
}

// registry is SitesConfig.Registry: the pools' answer, kept for the site's
// workflow actions.
func (v *servedSites) registry(site queuety.Site) (*queuety.Registry, error) {
	reg, err := v.pools.registry(site)
	if err == nil {
		v.mu.Lock()
		v.regs[site.Name] = reg
		v.dirs[site.Name] = site.Dir
		v.mu.Unlock()
	}
	return reg, err
}

// started is SitesConfig.Started.
func (v *servedSites) started(site queuety.Site, c *queuety.Client, w *queuety.Worker) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.run[site.Name] = servedSite{client: c, worker: w}
}

// stopped is SitesConfig.Stopped: the site is no longer shown as served,
// and its PHP pool is stopped.
func (v *servedSites) stopped(site queuety.Site) {
	v.mu.Lock()
	delete(v.run, site.Name)
	delete(v.regs, site.Name)
	delete(v.dirs, site.Name)
	v.mu.Unlock()
	v.pools.stopped(site)
}

func (v *servedSites) List() []dashboard.SiteInfo {
	st := v.sites.Status()
	out := make([]dashboard.SiteInfo, len(st))
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, s := range st {
		out[i] = dashboard.SiteInfo{Name: s.Name, URL: s.URL, Dir: v.dirs[s.Name]}
	}
	return out
}

func (v *servedSites) Open(_ context.Context, name string) (dashboard.Site, error) {
	v.mu.Lock()
	r, ok := v.run[name]
	reg := v.regs[name]
	v.mu.Unlock()
	if !ok {
		for _, st := range v.sites.Status() {
			if st.Name == name {
				return dashboard.Site{}, fmt.Errorf("not served (%s since %s): %s", st.State, st.Since.UTC().Format(time.DateTime), st.Error)
			}
		}
		return dashboard.Site{}, errors.New("no longer served")
	}
	s := dashboard.Site{Client: r.client, Registry: reg}
	if !r.client.Config().Webhooks.Disabled {
		s.WebhookDeliveries = r.worker.WebhookDeliveries
	}
	if pool := v.pools.poolOf(name); pool != nil {
		s.PoolStats = pool.Stats
	}
	return s, nil
}

// listen serves the dashboard of the sites on --http, when given; stop
// ends it.
func (v *servedSites) listen(ctx context.Context, c *cli.Context, log *slog.Logger) (stop func(), err error) {
	addr := c.String("http")
	if addr == "" {
		return func() {}, nil
	}
	if err := checkSitesHTTP(c); err != nil {
		return nil, err
	}
	ui, err := sitesDashboard(c, v, log)
	if err != nil {
		return nil, err
	}
	// /readyz decides as --metrics-listen's does, but says only a word: this
	// listener may face the network, and its pages need the operator token.
	srv, err := startSitesHTTP(ctx, c, addr, ui, sitesReady(v.sites, v.pools, false), log)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	fmt.Fprintf(c.App.ErrWriter, "queuety work: the dashboard of the sites listening on http://%s\n", srv.addr())
	return srv.stop, nil
}

// discoveredSites is the dashboard's view of the sites `serve
// --network|--sites` shows: discovered again every --sites-reread and on
// SIGHUP, each opened on demand with a queuety.SiteClients (a pool per
// database).
type discoveredSites struct {
	discover func(context.Context) ([]queuety.Site, error)
	clients  *queuety.SiteClients
	reg      *queuety.Registry
	log      *slog.Logger

	mu    sync.Mutex
	sites map[string]queuety.Site
}

// reread discovers the sites again; a failure keeps those known.
func (v *discoveredSites) reread(ctx context.Context) error {
	list, err := v.discover(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]queuety.Site, len(list))
	for _, s := range list {
		m[s.Name] = s
	}
	v.mu.Lock()
	v.sites = m
	v.mu.Unlock()
	v.clients.Keep(list)
	return nil
}

// run rereads every interval and on SIGHUP until ctx ends.
func (v *discoveredSites) run(ctx context.Context, every time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			v.log.Info("SIGHUP: reading the sites again")
		case <-t.C:
		}
		if err := v.reread(ctx); err != nil && ctx.Err() == nil {
			v.log.Warn("sites: discovery failed; showing the sites already known", "err", err)
		}
	}
}

func (v *discoveredSites) List() []dashboard.SiteInfo {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]dashboard.SiteInfo, 0, len(v.sites))
	for _, s := range v.sites {
		out = append(out, dashboard.SiteInfo{Name: s.Name, URL: s.URL, Dir: s.Dir})
	}
	return out
}

func (v *discoveredSites) Open(ctx context.Context, name string) (dashboard.Site, error) {
	v.mu.Lock()
	site, ok := v.sites[name]
	v.mu.Unlock()
	if !ok {
		return dashboard.Site{}, errors.New("no longer listed")
	}
	c, err := v.clients.Client(ctx, site)
	if err != nil {
		return dashboard.Site{}, err
	}
	return dashboard.Site{Client: c, Registry: v.reg}, nil
}

// serveSitesFlags are serve's flags for many sites: work's, but for the
// PHP pools and the slot budget (serve runs no handler), the site label
// cap (serve has no /metrics of many sites) and the idle look's interval
// (serve looks for no due job).
func serveSitesFlags() []cli.Flag {
	return slices.DeleteFunc(sitesFlags(), func(f cli.Flag) bool {
		n := f.Names()[0]
		return isPHPSitesFlag(f) || n == "max-slots" || n == "metrics-max-sites" || n == "idle-look-interval"
	})
}

// serveSites is `serve --network|--sites`: the dashboard of every site,
// nothing else (no worker runs here).
func (a *app) serveSites(c *cli.Context) error {
	if err := checkSitesHTTP(c); err != nil {
		return err
	}
	for _, f := range []string{"metrics-listen"} {
		if c.IsSet(f) {
			return usagef("--%s is not available with serve --network or --sites yet (docs/sites.md)", f)
		}
	}
	base, err := baseConfig(c)
	if err != nil {
		return err
	}
	if err := staleAfterConfig(c, &base); err != nil {
		return err
	}
	var own *siteSettingsReader
	if c.String("sites") != "" {
		own = newSiteSettingsReader(c, base.Logger) // each site's stale timeout decides its stuck rows
	}
	discover := sitesDiscovery(c, base, own)
	// A database that could not be opened is tried again after 30 s, as
	// the dashboard asks a server that did not answer again: each page
	// load would wait for it otherwise.
	clients := queuety.NewSiteClients(queuety.SiteClientsConfig{ConnsPerServer: c.Int("conns-per-server"), Retry: 30 * time.Second, Logger: base.Logger})
	defer clients.Close()
	src := &discoveredSites{discover: discover, clients: clients, reg: a.reg, log: base.Logger}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := src.reread(ctx); err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	// The rereads end before the clients are closed: a Keep after Close
	// would work on closed pools.
	var rereads sync.WaitGroup
	rereads.Go(func() { src.run(ctx, c.Duration("sites-reread")) })
	defer func() {
		stop()
		rereads.Wait()
	}()
	ui, err := sitesDashboard(c, src, base.Logger)
	if err != nil {
		return err
	}
	srv, err := startSitesHTTP(ctx, c, c.String("listen"), ui, httpapi.ReadyHandler(nil), base.Logger) // no worker: ready once listening
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "queuety serve: the dashboard of %d sites listening on http://%s\n", len(src.List()), srv.addr())
	stopNotify := notifyReady(ctx, base.Logger, nil)
	<-ctx.Done()
	stopNotify()
	srv.stop()
	return nil
}
