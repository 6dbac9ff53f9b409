package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/queuety-go/queuety/queuety/internal/fairshare"
	store "github.com/queuety-go/queuety/sql"
)

// Site is one set of Queuety tables to serve: a subsite of a multisite
// network or a single WordPress site. Its Config carries everything that
// differs between sites (DSN, table prefixes, the site's QUEUETY_*
// settings, worker settings); a Worker is built from it as for one site.
type Site struct {
	// Name identifies the site across re-reads ("blog 3", a wp-config
	// path); two sites of one Sites must not share it.
	Name string
	// URL is the site's home URL, for a PHP pool loaded for it (WP-CLI's
	// --url); empty for a single site.
	URL string
	// Dir is the site's WordPress directory (where its wp-config.php is),
	// for a PHP pool loaded for it; empty on a network, whose subsites
	// share one WordPress and differ by URL.
	Dir    string
	Config Config
	// Err, when set, is why the site cannot be served as listed (its
	// wp-config has a QUEUETY_* value that is refused): a new site is
	// reported failed with it and not started until a discovery lists it
	// without one; a served site keeps its worker and the settings it runs
	// on (sites_settings.go).
	Err error
	// Weight is the site's share of SitesConfig.MaxSlots against the other
	// sites with work (0: 1): with 1 and 3, a quarter and three quarters
	// of the slots while both have a backlog.
	Weight int
}

// Defaults of SitesConfig.
const (
	DefaultSitesReread       = time.Minute
	DefaultSitesRetry        = 5 * time.Second
	DefaultConnsPerServer    = 16
	DefaultSitesMaxConns     = 100
	DefaultSitesPollInterval = 2 * time.Second
	// DefaultSitesIdleLook is how often an idle server's sites are looked
	// at when no client wrote since the last look (SitesConfig.IdleLookInterval).
	DefaultSitesIdleLook = time.Second
	// With many sites a per-site loop is one batched statement for the
	// sites of a server a tick (sites_loops.go), but that statement reads a
	// table of every site, so its server time grows with the sites; these
	// keep the loops whose single-site tick is short longer (before the
	// batching, 100 idle sites sent 126 statements/s at the single-site
	// defaults, 20 of them the batched look). Each is a safety net or a
	// wake-up for work another process stored, so a longer tick delays
	// that work, it does not lose it.
	DefaultSitesSignalPoll   = 10 * time.Second // single site: 2 s
	DefaultSitesWaitSweep    = 30 * time.Second // single site: 5 s
	DefaultSitesRegistration = 20 * time.Second // single site: 10 s (stale after 60 s)
)

// SitesConfig configures a Sites supervisor.
type SitesConfig struct {
	// Discover lists the sites to serve; it is called at Run, every
	// Reread and on Sites.Reread (SIGHUP). A failed discovery keeps the
	// sites already served.
	Discover func(ctx context.Context) ([]Site, error)
	// Registry returns the handlers of a site (nil: one empty Registry
	// each, which serves nothing unless the site's Config has ClaimAll).
	// An error (a PHP pool that cannot start) fails the site's start,
	// which is tried again after Retry.
	Registry func(Site) (*Registry, error)
	// Reread is how often Discover runs again (default 1 min).
	Reread time.Duration
	// Retry is how often a site that could not be started is tried again
	// (default 5 s).
	Retry time.Duration
	// LookInterval is how often the sites of one server are looked at
	// together for due jobs (one statement for all of them; default
	// DefaultPollInterval): the dispatch → claim delay of an idle site.
	// Each such poll first reads the server's write counters, and runs
	// the look only when they moved (some client wrote rows: a dispatch,
	// a release, a retry), when the sites looked at changed, or when
	// IdleLookInterval passed since the last look.
	LookInterval time.Duration
	// IdleLookInterval is the longest a server's sites go without a look
	// while no client writes (default DefaultSitesIdleLook, or LookInterval
	// when longer; at least LookInterval): within it, jobs made due by the
	// time alone (a delay, a retry's backoff) are found. LookInterval
	// itself turns the gate off: every poll looks, no counter is read.
	IdleLookInterval time.Duration
	// ConnsPerServer is the connections the sites of one database server
	// share, whatever database each is in (default 16, at least 2); a
	// server is one user's (store.ServerOf), as a connection is. MaxConns
	// caps them over every server (default 100): a server past it is
	// reported, not served.
	ConnsPerServer int
	MaxConns       int
	// MaxSlots caps the jobs running at once over every site (0: no cap
	// but each site's Concurrency). While slots are short each one freed
	// goes to the site with work holding the fewest for its Weight, so a
	// backlog on one site takes its share and the others are not kept
	// waiting behind it; each site stays within its own Concurrency.
	MaxSlots int
	Logger   *slog.Logger
	// Started and Stopped, when set, are told of each site's worker
	// (metrics); Stopped also when a started Registry's site then failed
	// to start, so what Registry took (a PHP pool) is given back.
	Started func(Site, *Client, *Worker)
	Stopped func(Site)
	// MaxJobs, when positive, is how many jobs the sites claim in all:
	// one budget every site's worker takes from. Run stops every site
	// once they are claimed and finished (sites_limits.go).
	MaxJobs int
	// StopWhenEmpty has Run stop every site once each site it serves has
	// nothing left it can claim (flush, work --once); sites that could
	// not be started are not waited for, nor those whose database stopped
	// answering (SiteUnreachable), nor the rows of a site whose PHP cannot
	// run (Worker.PHPDown; they stay pending). Summary names them.
	StopWhenEmpty bool
}

// Sites serves many sites from one process: a Worker for each, the
// connections of a database server shared by its sites, and one idle look
// per server for all the sites on it, so an idle site costs a share
// of one statement a LookInterval instead of a statement every poll of
// every lane. A site whose database fails is reported and backed off
// alone; the others carry on.
type Sites struct {
	cfg SitesConfig
	log *slog.Logger

	openMu  sync.Mutex // serializes acquireDB's opens
	mu      sync.Mutex
	sites   map[string]*siteRun
	pools   map[string]*serverPool // by server DSN
	servers map[string]*serverLook // by server DSN
	conns   int                    // connections promised to open pools
	// slots is the budget of MaxSlots the sites' claims share; nil: none.
	slots *fairshare.Budget

	// open opens a connection pool (store.Open; a test counts statements
	// through its own).
	open func(ctx context.Context, dsn string, maxConns int, log *slog.Logger) (*sqlx.DB, error)
	// readCounters reads a server's write counters for its look's gate
	// (store.ReadWriteCounters; a test gives its own).
	readCounters func(ctx context.Context, db *sqlx.DB) (store.WriteCounters, error)
	looks        lookStats

	reread chan struct{}
	wg     sync.WaitGroup
	// started is closed once the first discovery's sites were started
	// (or failed to).
	started     chan struct{}
	startedOnce sync.Once

	// budget is MaxJobs shared by every site's worker, nil without one.
	budget *jobBudget
	// ended and stopWhy are what Summary reports (sites_limits.go).
	endedMu sync.Mutex
	ended   map[string]*SiteSummary
	stopWhy string

	openJobs openJobs // sites_observe.go
}

// SiteStatus is what Sites.Status reports of one site.
type SiteStatus struct {
	Name  string       `json:"name"`
	URL   string       `json:"url,omitempty"`
	State string       `json:"state"` // running, unreachable, failed
	Error string       `json:"error,omitempty"`
	Since time.Time    `json:"since"`
	Stats *WorkerStats `json:"stats,omitempty"`
	// Refused is why the site's latest listing was not applied (a bad
	// QUEUETY_* value): it runs on the settings it was started with.
	Refused string `json:"refused,omitempty"`

	// Slots are its worker's job slots, BusySlots those running a job.
	Slots     int `json:"slots,omitempty"`
	BusySlots int `json:"busy_slots,omitempty"`
}

// Site states.
const (
	SiteStarting    = "starting"
	SiteRunning     = "running"
	SiteUnreachable = "unreachable" // started, its database not answering
	SiteFailed      = "failed"      // could not be started; tried again every Retry
)

// siteRun is one served (or failing) site.
type siteRun struct {
	site   Site
	db     *sharedDB
	client *Client
	worker *Worker
	// due is the last batched look's answer, taken once by the worker's
	// idle lane (claimer.sharedIdleLook).
	due     atomic.Bool
	lookErr atomic.Pointer[error]
	// hooksAt is when the site's webhooks are read next (Sites.readHooks),
	// beatAt when its worker's registration heartbeat is written next
	// (Sites.beatWorkers), loopAt[k] when siteLoops[k] looks at its tables
	// next (Sites.runLoop): unix nanos, zero while there is none to run.
	hooksAt, beatAt atomic.Int64
	loopAt          []atomic.Int64

	// beatMu is held over a re-registration (Sites.reregister) and taken
	// by a stop over its clearing of worker, so a stopped worker is never
	// registered again after its goodbye; taken before mu.
	beatMu sync.Mutex

	mu      sync.Mutex
	state   string
	err     error
	since   time.Time
	retryAt time.Time
	refused error // the latest listing's Site.Err while the worker runs on
}

func (r *siteRun) set(state string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != state {
		r.since = time.Now()
	}
	r.state, r.err = state, err
}

// NewSites checks cfg and fills in its defaults.
func NewSites(cfg SitesConfig) (*Sites, error) {
	if cfg.Discover == nil {
		return nil, errors.New("sites: no Discover")
	}
	defDur(&cfg.Reread, DefaultSitesReread)
	defDur(&cfg.Retry, DefaultSitesRetry)
	defDur(&cfg.LookInterval, DefaultPollInterval)
	if cfg.LookInterval < MinPollInterval {
		return nil, fmt.Errorf("sites: LookInterval %v: at least %v", cfg.LookInterval, MinPollInterval)
	}
	defDur(&cfg.IdleLookInterval, max(DefaultSitesIdleLook, cfg.LookInterval))
	if cfg.IdleLookInterval < cfg.LookInterval {
		return nil, fmt.Errorf("sites: IdleLookInterval %v: at least LookInterval %v", cfg.IdleLookInterval, cfg.LookInterval)
	}
	switch {
	case cfg.ConnsPerServer == 0:
		cfg.ConnsPerServer = DefaultConnsPerServer
	case cfg.ConnsPerServer < 2:
		return nil, fmt.Errorf("sites: ConnsPerServer (--conns-per-server) %d: at least 2 (a retention sweep holds one connection for its lock and deletes on another)", cfg.ConnsPerServer)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultSitesMaxConns
	}
	var slots *fairshare.Budget
	switch {
	case cfg.MaxSlots < 0:
		return nil, fmt.Errorf("sites: MaxSlots (--max-slots) %d: 0 (no cap) or more", cfg.MaxSlots)
	case cfg.MaxSlots > 0:
		slots = fairshare.New(cfg.MaxSlots)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxJobs < 0 {
		return nil, fmt.Errorf("sites: MaxJobs %d: must not be negative (0: no limit)", cfg.MaxJobs)
	}
	s := &Sites{cfg: cfg, log: cfg.Logger, sites: map[string]*siteRun{}, pools: map[string]*serverPool{},
		servers: map[string]*serverLook{}, slots: slots, open: store.Open, readCounters: store.ReadWriteCounters,
		reread: make(chan struct{}, 1), started: make(chan struct{}), ended: map[string]*SiteSummary{}}
	if cfg.MaxJobs > 0 {
		s.budget = newJobBudget(cfg.MaxJobs, true)
	}
	return s, nil
}

// Started is closed once Run has started the sites of its first
// discovery (those it could; the others are reported and retried).
func (s *Sites) Started() <-chan struct{} { return s.started }

// Reread makes Run discover the sites again now (SIGHUP).
func (s *Sites) Reread() {
	select {
	case s.reread <- struct{}{}:
	default:
	}
}

// Run serves the sites until ctx ends, then stops every worker (each
// within its ShutdownGrace) and closes the connections. It fails only
// when the first discovery does.
func (s *Sites) Run(ctx context.Context) error {
	sites, err := s.cfg.Discover(ctx)
	if err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	s.reconcile(ctx, sites)
	s.startedOnce.Do(func() { close(s.started) })
	reread := time.NewTicker(s.cfg.Reread)
	defer reread.Stop()
	retry := time.NewTicker(s.cfg.Retry)
	defer retry.Stop()
	limits, stopLimits := s.limitsTicker()
	defer stopLimits()
	for {
		select {
		case <-ctx.Done():
			s.stopAll(ctx)
			return nil
		case <-retry.C:
			s.retryFailed(ctx)
			continue
		case <-limits:
			if why := s.limitReached(); why != "" {
				s.log.Info("sites: stopping every site", "why", why)
				s.endedMu.Lock()
				s.stopWhy = why
				s.endedMu.Unlock()
				s.stopAll(ctx)
				return nil
			}
			continue
		case <-reread.C:
		case <-s.reread:
		}
		sites, err := s.cfg.Discover(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sites: discovery failed; serving the sites already known", "err", err)
			}
			continue
		}
		s.reconcile(ctx, sites)
	}
}

// reconcile starts the sites new in list and stops those gone from it.
func (s *Sites) reconcile(ctx context.Context, list []Site) {
	want := map[string]Site{}
	for _, site := range list {
		if _, dup := want[site.Name]; dup {
			s.log.Warn("sites: a site listed twice is served once", "site", site.Name)
			continue
		}
		want[site.Name] = site
	}
	s.mu.Lock()
	var gone, changed []*siteRun
	for name, r := range s.sites {
		next, ok := want[name]
		switch {
		case !ok:
			gone = append(gone, r)
			delete(s.sites, name)
		case s.keep(r, next):
		default:
			// Its settings changed: stopped as on SIGTERM, started again
			// below with the new ones.
			changed = append(changed, r)
			delete(s.sites, name)
		}
	}
	var added []*siteRun
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := s.sites[name]; !ok {
			r := &siteRun{site: want[name], state: SiteStarting, since: time.Now(), loopAt: make([]atomic.Int64, len(siteLoops))}
			s.sites[name] = r
			added = append(added, r)
		}
	}
	s.mu.Unlock()
	var stops sync.WaitGroup // each within its grace, side by side
	stops.Go(func() { s.stopSites(ctx, gone, "sites: site no longer served") })
	stops.Go(func() { s.stopSites(ctx, changed, "sites: site stopped to apply its changed settings") })
	stops.Wait()
	// A few at a time: a start is several round trips (server checks,
	// schema check, the worker's registration), and a network of hundreds
	// would otherwise wait for them one by one.
	var wg sync.WaitGroup
	sem := make(chan struct{}, startParallel)
	for _, r := range added {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if r.site.Err != nil {
				s.refuse(r)
				return
			}
			s.log.Info("sites: serving a new site", "site", r.site.Name, "url", r.site.URL)
			s.start(ctx, r)
		}()
	}
	wg.Wait()
}

// startParallel is how many sites start at once.
const startParallel = 8

func (s *Sites) retryFailed(ctx context.Context) {
	s.mu.Lock()
	var due []*siteRun
	for _, r := range s.sites {
		r.mu.Lock()
		if r.worker == nil && r.site.Err == nil && time.Now().After(r.retryAt) {
			due = append(due, r)
		}
		r.mu.Unlock()
	}
	s.mu.Unlock()
	for _, r := range due {
		s.start(ctx, r)
	}
}

// start opens the site's client on its database's shared pool and starts
// its worker; a failure is recorded and tried again after Retry.
func (s *Sites) start(ctx context.Context, r *siteRun) {
	if err := s.startSite(ctx, r); err != nil {
		s.log.Warn("sites: site not started; trying again later", "site", r.site.Name, "err", err, "in", s.cfg.Retry)
		r.mu.Lock()
		r.retryAt = time.Now().Add(s.cfg.Retry)
		r.mu.Unlock()
		r.set(SiteFailed, err)
	}
}

func (s *Sites) startSite(ctx context.Context, r *siteRun) error {
	cfg := r.site.Config
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	cfg.Logger = cfg.Logger.With("site", r.site.Name)
	if s.budget != nil {
		// A chained step runs without a claim, so it would not count
		// against MaxJobs: every step goes through the claim.
		cfg.WorkflowChainSteps = -1
	}
	// The batched look kicks an idle site's lanes when it has work; their
	// own poll is only the fallback.
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultSitesPollInterval
	}
	if err := cfg.Validate(); err != nil {
		return &ConfigError{err}
	}
	if err := store.CheckDSN(cfg.DSN); err != nil {
		return &ConfigError{err}
	}
	tables, err := cfg.naming().Resolve()
	if err != nil {
		return &ConfigError{err}
	}
	db, err := s.acquireDB(ctx, cfg)
	if err != nil {
		return err
	}
	client, err := sharedClient(cfg, tables, db.db, db.database, db.info)
	if err != nil {
		s.releaseDB(db)
		return err
	}
	// A retention sweep holds a connection of the shared pool for its
	// lock: the pool's sites sweep in turn (Client.Sweep).
	client.sweepTurn = db.sweeps
	var handlers *Registry
	if s.cfg.Registry != nil {
		if handlers, err = s.cfg.Registry(r.site); err != nil {
			s.releaseDB(db)
			return err
		}
	}
	// undo gives back what a failed start took.
	undo := func() {
		s.releaseDB(db)
		if s.cfg.Stopped != nil && s.cfg.Registry != nil {
			s.cfg.Stopped(r.site)
		}
	}
	w, err := client.NewWorker(handlers)
	if err != nil {
		undo()
		return &ConfigError{err}
	}
	// A run that stops once every site is drained has each idle lane read
	// for itself: Drained must not trust a batched look up to a
	// LookInterval old (a workflow's next step just enqueued).
	if !s.cfg.StopWhenEmpty {
		w.claim.sharedLook = r
	}
	if s.budget != nil {
		w.claim.limits.jobBudget = s.budget
	}
	if s.slots != nil {
		w.claim.shareSlots(s.slots.Join(r.site.Weight))
	}
	if w.hooks != nil {
		// Its server's read loop reads its webhooks with every other
		// site's (Sites.readHooks); the notifier reads them once at Start.
		w.hooks.ReadElsewhere()
	}
	// And its schedules, stale rows, old rows and workflows' waits are
	// looked at with theirs (sites_loops.go), each loop's round run only
	// when its look found something.
	handOverLoops(w)
	if err := w.Start(ctx); err != nil {
		undo()
		return err
	}
	// The registration's heartbeat too is written with every other
	// site's (Sites.beatWorkers): the worker's own loop, which sends
	// nothing before its first interval, is stopped at once.
	w.sessions.beat.Stop()
	r.beatAt.Store(time.Now().Add(w.cfg.RegistrationHeartbeat).UnixNano())
	if w.hooks != nil {
		r.hooksAt.Store(time.Now().Add(w.cfg.Webhooks.Refresh).UnixNano())
	}
	scheduleLoops(r, w, time.Now())
	r.mu.Lock()
	r.db, r.client, r.worker = db, client, w
	r.mu.Unlock()
	r.set(SiteRunning, nil)
	if s.cfg.Started != nil {
		s.cfg.Started(r.site, client, w)
	}
	return nil
}

// Status reports every known site, sorted by name.
func (s *Sites) Status() []SiteStatus {
	s.mu.Lock()
	runs := slices.Collect(maps.Values(s.sites))
	s.mu.Unlock()
	out := make([]SiteStatus, 0, len(runs))
	for _, r := range runs {
		r.mu.Lock()
		st := SiteStatus{Name: r.site.Name, URL: r.site.URL, State: r.state, Since: r.since}
		if r.err != nil {
			st.Error = r.err.Error()
		}
		if r.refused != nil {
			st.Refused = r.refused.Error()
		}
		if r.worker != nil {
			ws := r.worker.Stats()
			st.Stats = &ws
			st.BusySlots, st.Slots = r.worker.Slots()
		}
		r.mu.Unlock()
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b SiteStatus) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Unreachable names the sites that are not being served: their database
// does not answer, or they could not be started.
func (s *Sites) Unreachable() []string {
	var out []string
	for _, st := range s.Status() {
		if st.State == SiteUnreachable || st.State == SiteFailed {
			out = append(out, st.Name)
		}
	}
	return out
}

func (s *Sites) stopAll(ctx context.Context) {
	s.mu.Lock()
	runs := slices.Collect(maps.Values(s.sites))
	s.sites = map[string]*siteRun{}
	s.mu.Unlock()
	s.noteNotServed(runs)
	s.stopSites(ctx, runs, "sites: site no longer served")
	s.mu.Lock()
	for k, l := range s.servers {
		l.stop()
		delete(s.servers, k)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// stopSites stops the workers of runs at once (each within its grace) and
// releases their connections. ctx gives the stops its values, not its end:
// Run stops every site once its ctx ended, and each stop gets its grace.
func (s *Sites) stopSites(ctx context.Context, runs []*siteRun, msg string) {
	ctx = context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range runs {
		r.beatMu.Lock() // a re-registration under way ends first
		r.mu.Lock()
		w, db := r.worker, r.db
		r.worker = nil
		r.mu.Unlock()
		r.beatMu.Unlock()
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Stop(ctx); err != nil {
				s.log.Warn("sites: stopping a site's worker", "site", r.site.Name, "err", err)
			}
			s.noteStopped(r.site.Name, w.Stats())
			s.releaseDB(db)
			if s.cfg.Stopped != nil {
				s.cfg.Stopped(r.site)
			}
			s.log.Info(msg, "site", r.site.Name)
		}()
	}
	wg.Wait()
}
