package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/httpapi"
	"github.com/queuety-go/queuety/internal/metrics"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/poolset"
)

// metricsMaxSitesFlag is --metrics-max-sites (work --network/--sites).
func metricsMaxSitesFlag() cli.Flag {
	return &cli.IntFlag{Name: "metrics-max-sites", Value: metrics.DefaultMaxSites, EnvVars: []string{"QUEUETY_METRICS_MAX_SITES"},
		Usage: "with --network or --sites and --metrics-listen, at most this many site label values: the first by name (blog 2 before blog 10) keep theirs, the rest are summed under site=\"other\""}
}

// sitesObservability is the --metrics-listen listener of work
// --network/--sites: /metrics (every site's series with a site label),
// /healthz, /readyz (503 naming the sites not served, with why) and /sites
// (every site's state, slots and open jobs, JSON).
type sitesObservability struct {
	addr string
	m    *metrics.Sites
	src  *sitesSource
	log  *slog.Logger
}

// newSitesObservability reads --metrics-listen and --metrics-max-sites;
// nil without a listener (nothing is counted then).
func newSitesObservability(c *cli.Context, log *slog.Logger) (*sitesObservability, error) {
	maxSites := c.Int("metrics-max-sites")
	if maxSites < 1 {
		return nil, usagef("--metrics-max-sites %d: must be at least 1", maxSites)
	}
	raw := c.String("metrics-listen")
	if raw == "" {
		return nil, nil
	}
	addr, err := metricsAddr(raw)
	if err != nil {
		return nil, err
	}
	src := &sitesSource{}
	b := ReadBuildInfo()
	m := metrics.NewSites(metrics.SitesConfig{Source: src, MaxSites: maxSites, Logger: log,
		Build: metrics.Build{Version: b.Version, GoVersion: b.GoVersion, Commit: b.Commit}})
	return &sitesObservability{addr: addr, m: m, src: src, log: log}, nil
}

// observed gives each site discover finds an observer counting into its
// site label. The labels are handed out for every site found before any
// of their workers counts: handed out as each first counted, a site
// counting early could be pushed into "other" by one earlier by name
// that counted later, and its first counts would go with its label.
func (o *sitesObservability) observed(discover func(context.Context) ([]queuety.Site, error)) func(context.Context) ([]queuety.Site, error) {
	if o == nil {
		return discover
	}
	return func(ctx context.Context) ([]queuety.Site, error) {
		sites, err := discover(ctx)
		if err != nil {
			return sites, err
		}
		names := make([]string, len(sites))
		for i := range sites {
			name := sites[i].Name
			names[i] = name
			sites[i].Config.Observer = observer{func() *metrics.Counters { return o.m.Counters(name) }}
		}
		o.m.Sync(names)
		return sites, nil
	}
}

// start serves the listener for s (its PHP pools from pools) until stop.
func (o *sitesObservability) start(ctx context.Context, stderr io.Writer, s *queuety.Sites, pools *sitePools) (stop func(), err error) {
	if o == nil {
		return func() {}, nil
	}
	o.src.s, o.src.pools = s, pools
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.m.Handler())
	mux.Handle("GET /healthz", httpapi.HealthHandler())
	mux.Handle("GET /readyz", sitesReady(s, pools, true))
	mux.Handle("GET /sites", sitesList(s, pools))
	l, err := startLocalListener(ctx, o.addr, mux, o.log, 0)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "queuety work: /metrics, /healthz, /readyz and /sites on http://%s\n", l.addr())
	return l.stop, nil
}

// sitesReady is /readyz of work --network/--sites: 503 while any site is
// not served (its database does not answer, its start failed) or its PHP
// pool's last start failed (its PHP jobs are not served); 200 "ready"
// else. With detail the 503 names each, a line a site after the first,
// with its state and why; without, it says "not ready" alone, as the HTTP
// API's /readyz does.
func sitesReady(s *queuety.Sites, pools *sitePools, detail bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		var names, reasons []string
		for _, st := range s.Status() {
			if st.State != queuety.SiteUnreachable && st.State != queuety.SiteFailed {
				if php := pools.status(st.Name); php != nil && php.State == poolset.StateFailed {
					names = append(names, esc(st.Name))
					reasons = append(reasons, fmt.Sprintf("%s: php pool failed: %s", esc(st.Name), esc(php.Error)))
				}
				continue
			}
			names = append(names, esc(st.Name))
			reasons = append(reasons, fmt.Sprintf("%s: %s: %s", esc(st.Name), st.State, esc(st.Error)))
		}
		if len(names) == 0 {
			fmt.Fprintln(w, "ready")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		if !detail {
			fmt.Fprintln(w, "not ready")
			return
		}
		fmt.Fprintf(w, "not ready: not served: %s\n%s\n", strings.Join(names, ", "), strings.Join(reasons, "\n"))
	})
}

// siteView is one site of /sites: its status and its open jobs by status
// (pending, processing, failed, buried; read with every site of its
// server in one statement, reused 2 s), or why they could not be read;
// with --php, its PHP pool.
type siteView struct {
	queuety.SiteStatus
	Jobs      map[string]int  `json:"jobs,omitempty"`
	JobsError string          `json:"jobs_error,omitempty"`
	PHPPool   *poolset.Status `json:"php_pool,omitempty"`
}

// sitesList is /sites: every known site, by name.
func sitesList(s *queuety.Sites, pools *sitePools) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jobs := s.OpenJobs(r.Context())
		status := s.Status()
		out := make([]siteView, len(status))
		for i, st := range status {
			out[i].SiteStatus = st
			out[i].PHPPool = pools.status(st.Name)
			if j, ok := jobs[st.Name]; ok {
				if j.Err != nil {
					out[i].JobsError = j.Err.Error()
					continue
				}
				out[i].Jobs = map[string]int{}
				for _, status := range metrics.JobStatuses {
					out[i].Jobs[status] = 0
				}
				for status, n := range j.Totals() {
					out[i].Jobs[status] = n
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// sitesSource is what /metrics reads of the sites at a scrape.
type sitesSource struct {
	s     *queuety.Sites
	pools *sitePools
}

func (src *sitesSource) SitesSnapshot(ctx context.Context) metrics.SitesSnapshot {
	var out metrics.SitesSnapshot
	if src.s == nil {
		return out
	}
	jobs := src.s.OpenJobs(ctx)
	for _, st := range src.s.Status() {
		site := metrics.SiteSnapshot{Name: st.Name, State: st.State, Busy: st.BusySlots, Slots: st.Slots, Pool: src.pools.statsOf(st.Name)}
		if j, ok := jobs[st.Name]; ok {
			site.JobsErr = j.Err
			for _, c := range j.Jobs {
				site.Jobs = append(site.Jobs, metrics.JobCount{Queue: c.Queue, Status: c.Status, N: float64(c.N)})
			}
		}
		out.Sites = append(out.Sites, site)
	}
	for _, sv := range src.s.Servers() {
		out.Servers = append(out.Servers, metrics.ServerSnapshot{Server: sv.Server, Sites: sv.Sites, Looks: sv.Looks,
			LookErrors: sv.LookErrors, LookSeconds: sv.LookTime.Seconds()})
	}
	return out
}

// statsOf is the PHP pool of the site named name, nil without one.
func (p *sitePools) statsOf(name string) *metrics.PoolStats {
	if p == nil {
		return nil
	}
	pool := p.poolOf(name)
	if pool == nil {
		return nil
	}
	st := poolStats(pool)
	return &st
}

// openJobsReadMS times three reads of every site's open jobs (bench
// sites), each past the previous one's reuse.
func openJobsReadMS(ctx context.Context, s *queuety.Sites) []float64 {
	var out []float64
	for i := range 3 {
		if i > 0 {
			time.Sleep(queuety.DefaultOpenJobsCacheFor)
		}
		start := time.Now()
		s.OpenJobs(ctx)
		out = append(out, float64(time.Since(start))/float64(time.Millisecond))
	}
	return out
}
