package metrics

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const (
	// DefaultMaxSites caps the distinct site label values: every site
	// label multiplies the per-site series (a few dozen, more with many
	// queues or handlers), so a host of thousands of sites would otherwise
	// make a scrape of hundreds of thousands.
	DefaultMaxSites = 100
	// OtherSite is the site label of the sites past the cap, summed.
	OtherSite = "other"
)

// SitesConfig configures a Sites.
type SitesConfig struct {
	Source SitesSource // required
	// MaxSites caps the site label values (default DefaultMaxSites).
	MaxSites int
	// MaxHandlers and MaxQueues cap each site label's handler and queue
	// values (defaults as Config's).
	MaxHandlers, MaxQueues int
	CacheFor               time.Duration // default DefaultCacheFor
	Now                    func() time.Time
	Build                  Build
	Logger                 *slog.Logger
}

// SitesSource reads what many sites look like at one moment.
type SitesSource interface {
	SitesSnapshot(ctx context.Context) SitesSnapshot
}

// SitesSnapshot is every known site and every database server looked at.
type SitesSnapshot struct {
	Sites   []SiteSnapshot
	Servers []ServerSnapshot
}

// SiteSnapshot is one site at one moment.
type SiteSnapshot struct {
	Name string
	// State is the site's state: starting, running, unreachable (its
	// database does not answer) or failed (it could not be started).
	State string
	// Busy and Slots are its worker's job slots (0 without a worker).
	Busy, Slots int
	// Pool is its PHP pool's, nil without one.
	Pool *PoolStats
	// Jobs are its open jobs by queue and status; JobsErr says why they
	// could not be read (a site not running is not read: both nil).
	Jobs    []JobCount
	JobsErr error
}

// ServerSnapshot is the batched look of one database server, counted
// since it started.
type ServerSnapshot struct {
	// Server names it (its address, never its credentials).
	Server      string
	Sites       int
	Looks       uint64
	LookErrors  uint64
	LookSeconds float64
}

// SiteRunning is the state of a site served with its database answering.
const SiteRunning = "running"

// SiteStates are the states every queuety_sites series is emitted for.
var SiteStates = []string{"starting", "running", "unreachable", "failed"}

// Sites is the exposition of many sites served by one process: the
// series of one site, each with a site label, at most MaxSites label
// values. The sites first by name (digits compared as numbers, so blog 2
// before blog 10) hold their own label; the rest, and a site named
// "other", are summed under site="other". A site that is no longer known
// has its series removed; one that moves into "other" (a site earlier by
// name appeared) starts counting there, and its own series are removed.
type Sites struct {
	cfg      SitesConfig
	registry *prometheus.Registry

	mu     sync.RWMutex
	labels map[string]string    // site name → its label value (its own or OtherSite)
	own    map[string]*Counters // site name → its counters, registered under its label
	other  *Counters            // the folded sites', registered under OtherSite
	folded int

	snapMu sync.Mutex
	snap   SitesSnapshot
	snapAt time.Time
}

// NewSites builds the registry: build info, Go runtime and process
// collectors, the scrape-time gauges of every site and server; each site
// label's counters are added as sites become known.
func NewSites(cfg SitesConfig) *Sites {
	if cfg.MaxSites <= 0 {
		cfg.MaxSites = DefaultMaxSites
	}
	if cfg.MaxHandlers <= 0 {
		cfg.MaxHandlers = DefaultMaxHandlers
	}
	if cfg.MaxQueues <= 0 {
		cfg.MaxQueues = DefaultMaxQueues
	}
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sites{cfg: cfg, registry: prometheus.NewRegistry(), labels: map[string]string{}, own: map[string]*Counters{}}
	s.registry.MustRegister(newBuildInfo(cfg.Build), &sitesGauges{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s
}

// Handler serves the exposition format. Each scrape first reads the sites
// (at most once a CacheFor) and brings the site labels up to date, so the
// series of a site that went are gone from it.
func (s *Sites) Handler() http.Handler {
	h := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refresh(r.Context())
		h.ServeHTTP(w, r)
	})
}

// refresh reads the snapshot when the cached one is older than CacheFor
// and syncs the labels with its sites. Concurrent scrapes share one read.
func (s *Sites) refresh(ctx context.Context) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	now := s.cfg.Now()
	if !s.snapAt.IsZero() && now.Sub(s.snapAt) < s.cfg.CacheFor {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	s.snap, s.snapAt = s.cfg.Source.SitesSnapshot(ctx), now
	names := make([]string, len(s.snap.Sites))
	for i, site := range s.snap.Sites {
		names[i] = site.Name
	}
	s.Sync(names)
}

// Counters are the counters of the site named name, to give its worker's
// observer: its own label's, or the folded sites'. A site not known yet
// is added.
func (s *Sites) Counters(name string) *Counters {
	s.mu.RLock()
	c, ok := s.countersOf(name)
	s.mu.RUnlock()
	if ok {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.countersOf(name); ok {
		return c
	}
	s.assign(append(slices.Collect(maps.Keys(s.labels)), name))
	c, _ = s.countersOf(name)
	return c
}

func (s *Sites) countersOf(name string) (*Counters, bool) {
	l, ok := s.labels[name]
	if !ok {
		return nil, false
	}
	if l == OtherSite {
		return s.other, true
	}
	return s.own[name], true
}

// Sync makes names the known sites: the labels are handed out again, the
// counters of a site gone or folded are removed from the exposition.
func (s *Sites) Sync(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.assign(names)
}

// assign hands out the labels for names (s.mu held): the first MaxSites
// by natural order that are not "other" and whose label no earlier site
// took hold their own (a name that is not valid UTF-8 is labelled with
// its invalid bytes replaced, as a label value must be UTF-8).
func (s *Sites) assign(names []string) {
	sorted := slices.Clone(names)
	slices.SortFunc(sorted, naturalCompare)
	sorted = slices.Compact(sorted)
	labels := make(map[string]string, len(sorted))
	taken := map[string]bool{}
	folded := 0
	for _, n := range sorted {
		l := strings.ToValidUTF8(n, "\uFFFD")
		if l == OtherSite || taken[l] || len(taken) >= s.cfg.MaxSites {
			labels[n] = OtherSite
			folded++
			continue
		}
		taken[l] = true
		labels[n] = l
	}
	// Unregister first: a site's label freed here may be taken by
	// another site below.
	for n, c := range s.own {
		if labels[n] != s.labels[n] {
			s.unregister(s.labels[n], c)
			delete(s.own, n)
		}
	}
	if folded == 0 && s.other != nil {
		s.unregister(OtherSite, s.other)
		s.other = nil
	}
	for _, n := range sorted {
		switch l := labels[n]; {
		case l != OtherSite && s.own[n] == nil:
			s.own[n] = s.register(l)
		case l == OtherSite && s.other == nil:
			s.other = s.register(OtherSite)
		}
	}
	s.labels, s.folded = labels, folded
}

func (s *Sites) register(label string) *Counters {
	c := newCounters(s.cfg.MaxHandlers, s.cfg.MaxQueues, s.cfg.Now)
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"site": label}, s.registry).Register(c); err != nil {
		// Cannot happen with the labels assign hands out (valid UTF-8,
		// each once); if it does, the site is counted but not shown.
		s.cfg.Logger.Warn("metrics: a site's counters could not be registered", "site", label, "err", err)
	}
	return c
}

func (s *Sites) unregister(label string, c *Counters) {
	prometheus.WrapRegistererWith(prometheus.Labels{"site": label}, s.registry).Unregister(c)
}

// naturalCompare orders strings with their runs of digits compared as
// numbers ("blog 2" before "blog 10"), then bytewise.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := digitsEnd(a, i), digitsEnd(b, j)
			na, nb := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if len(na) != len(nb) {
				return cmpInt(len(na), len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return cmpInt(int(a[i]), int(b[j]))
		}
		i++
		j++
	}
	if c := cmpInt(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var (
	descSiteJobs      = prometheus.NewDesc("queuety_jobs", "Jobs in the table not completed (pending, processing, failed, buried), by site, queue and status.", []string{"site", "queue", "status"}, nil)
	descSiteUp        = prometheus.NewDesc("queuety_database_up", "1 when the site is served and the last read of its tables succeeded (other: 1 when every site summed there is).", []string{"site"}, nil)
	descSiteSlots     = prometheus.NewDesc("queuety_worker_slots", "The site's worker's job slots, by state (busy, idle).", []string{"site", "state"}, nil)
	descSitePoolProcs = prometheus.NewDesc("queuety_php_pool_processes", "The site's PHP pool processes alive in their slots.", []string{"site"}, nil)
	descSitePoolSlots = prometheus.NewDesc("queuety_php_pool_slots", "The site's PHP pool slots, by state (busy, idle).", []string{"site", "state"}, nil)
	descSitePoolRest  = prometheus.NewDesc("queuety_php_pool_restarts_total", "The site's PHP pool processes started to replace one (after a crash, a kill or a recycle).", []string{"site"}, nil)
	descSitePoolKills = prometheus.NewDesc("queuety_php_pool_kills_total", "The site's PHP pool processes killed because their job's time ran out or it was cancelled.", []string{"site"}, nil)
	descSitePoolCrash = prometheus.NewDesc("queuety_php_pool_crashes_total", "The site's PHP pool processes that died on their own.", []string{"site"}, nil)
	descSitePoolRecyc = prometheus.NewDesc("queuety_php_pool_recycles_total", "The site's PHP pool processes retired after their job or memory limit.", []string{"site"}, nil)
	descSites         = prometheus.NewDesc("queuety_sites", "Sites known to this process, by state: starting, running, unreachable (its database does not answer), failed (it could not be started; tried again).", []string{"state"}, nil)
	descSitesFolded   = prometheus.NewDesc("queuety_sites_folded", "Sites whose series are summed under site=\"other\" (past --metrics-max-sites).", nil, nil)
	descServerSites   = prometheus.NewDesc("queuety_sites_server_sites", "Started sites on the database server, looked at together.", []string{"server"}, nil)
	descServerLook    = prometheus.NewDesc("queuety_sites_look_duration_seconds", "How long the batched looks at the due jobs of every site on the database server took, since its look started.", []string{"server"}, nil)
	descServerLookErr = prometheus.NewDesc("queuety_sites_look_errors_total", "Batched looks of the database server that failed (then each database was looked at alone).", []string{"server"}, nil)
)

// sitesGauges collects the scrape-time series of a Sites from its last
// snapshot.
type sitesGauges struct{ s *Sites }

func (g *sitesGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSiteJobs, descSiteUp, descSiteSlots, descSitePoolProcs, descSitePoolSlots, descSitePoolRest,
		descSitePoolKills, descSitePoolCrash, descSitePoolRecyc, descSites, descSitesFolded, descServerSites, descServerLook, descServerLookErr} {
		ch <- d
	}
}

// siteGroup is one site label's sites, summed.
type siteGroup struct {
	label       string
	up          bool
	read        bool // some site's jobs were read
	jobs        []JobCount
	busy, slots int
	pool        *PoolStats
}

func (g *sitesGauges) Collect(ch chan<- prometheus.Metric) {
	s := g.s
	s.snapMu.Lock()
	snap := s.snap
	s.snapMu.Unlock()
	s.mu.RLock()
	labels, folded := s.labels, s.folded
	s.mu.RUnlock()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, lv...)
	}
	states := map[string]float64{}
	groups := map[string]*siteGroup{}
	var order []*siteGroup
	for _, site := range snap.Sites {
		states[site.State]++
		l, ok := labels[site.Name]
		if !ok {
			continue // gone since the snapshot
		}
		gr := groups[l]
		if gr == nil {
			gr = &siteGroup{label: l, up: true}
			groups[l] = gr
			order = append(order, gr)
		}
		gr.up = gr.up && site.State == SiteRunning && site.JobsErr == nil
		if site.State == SiteRunning && site.JobsErr == nil {
			gr.read = true
			gr.jobs = append(gr.jobs, site.Jobs...)
		}
		gr.busy += site.Busy
		gr.slots += site.Slots
		if p := site.Pool; p != nil {
			if gr.pool == nil {
				gr.pool = &PoolStats{}
			}
			gr.pool.add(*p)
		}
	}
	for _, gr := range order {
		emit(descSiteUp, prometheus.GaugeValue, boolFloat(gr.up), gr.label)
		emit(descSiteSlots, prometheus.GaugeValue, float64(gr.busy), gr.label, "busy")
		emit(descSiteSlots, prometheus.GaugeValue, float64(max(0, gr.slots-gr.busy)), gr.label, "idle")
		if gr.read {
			for _, q := range queueSeries(Snapshot{Jobs: gr.jobs}, s.cfg.MaxQueues) {
				for _, st := range JobStatuses {
					emit(descSiteJobs, prometheus.GaugeValue, q.jobs[st], gr.label, q.name, st)
				}
			}
		}
		if p := gr.pool; p != nil {
			emit(descSitePoolProcs, prometheus.GaugeValue, float64(p.Processes), gr.label)
			emit(descSitePoolSlots, prometheus.GaugeValue, float64(p.Busy), gr.label, "busy")
			emit(descSitePoolSlots, prometheus.GaugeValue, float64(max(0, p.Slots-p.Busy)), gr.label, "idle")
			emit(descSitePoolRest, prometheus.CounterValue, float64(max(0, p.Spawns-p.Slots)), gr.label)
			emit(descSitePoolKills, prometheus.CounterValue, float64(p.Kills), gr.label)
			emit(descSitePoolCrash, prometheus.CounterValue, float64(p.Crashes), gr.label)
			emit(descSitePoolRecyc, prometheus.CounterValue, float64(p.Recycles), gr.label)
		}
	}
	for _, st := range withKeys(SiteStates, states) {
		emit(descSites, prometheus.GaugeValue, states[st], st)
	}
	emit(descSitesFolded, prometheus.GaugeValue, float64(folded))
	for _, sv := range snap.Servers {
		emit(descServerSites, prometheus.GaugeValue, float64(sv.Sites), sv.Server)
		ch <- prometheus.MustNewConstSummary(descServerLook, sv.Looks, sv.LookSeconds, nil, sv.Server)
		emit(descServerLookErr, prometheus.CounterValue, float64(sv.LookErrors), sv.Server)
	}
}

func (p *PoolStats) add(o PoolStats) {
	p.Slots += o.Slots
	p.Processes += o.Processes
	p.Busy += o.Busy
	p.Spawns += o.Spawns
	p.Crashes += o.Crashes
	p.Kills += o.Kills
	p.Recycles += o.Recycles
	p.Jobs += o.Jobs
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
