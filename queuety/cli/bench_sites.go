package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

// SitesBenchResult is what `bench sites --json` prints.
type SitesBenchResult struct {
	Sites        int    `json:"sites"`
	Databases    int    `json:"databases"`
	Mode         string `json:"mode"` // sites, or plain (one Worker, --plain)
	PollInterval string `json:"poll_interval"`
	Loops        bool   `json:"loops"` // the stale sweep, retention and workflows on (--loops)
	Server       string `json:"server"`
	// Idle: the server's statements a second over the window (Questions,
	// every client's), with the daemon and before it started (the
	// server's background, other clients included), the bench's own
	// reads taken off both.
	IdleSecs           float64 `json:"idle_seconds"`
	StatementsPerSec   float64 `json:"idle_statements_per_second"`
	BackgroundPerSec   float64 `json:"background_statements_per_second"`
	DaemonCPUPct       float64 `json:"idle_daemon_cpu_percent"`
	ServerCPUPct       float64 `json:"idle_server_cpu_percent,omitempty"`
	ServerBackgroundPc float64 `json:"background_server_cpu_percent,omitempty"`
	ServerMeasured     bool    `json:"server_measured"`
	RSSMiB             float64 `json:"rss_mib"`
	// Connections: the daemon's open at the end of the idle window and
	// at the end of the skewed drain (Sites.Servers; --plain: the server's
	// processlist, every connection whose database is one of the run's),
	// and how many its pools may open (--conns-per-server, and 2 for the
	// server's look).
	IdleConns  int `json:"idle_connections"`
	BusyConns  int `json:"busy_connections"`
	MaxPoolsOf int `json:"pool_connections_cap"`
	// HeapLiveMiB is the Go heap the last collection found live (after a
	// collection at the window's end), Goroutines the goroutines then: with
	// Sites and RSSMiB, what a site costs the daemon idle.
	HeapLiveMiB float64 `json:"heap_live_mib"`
	Goroutines  int     `json:"goroutines"`
	// The look's gate over the idle window (not with --plain): the polls,
	// the full looks they ran and why (queuety.SitesLooks).
	IdleLookInterval string             `json:"idle_look_interval,omitempty"`
	IdleLooks        queuety.SitesLooks `json:"idle_looks"`
	// A busy neighbour (--noise): the rows a second another connection
	// was asked to write into a database of its own, and wrote over the
	// idle window (it writes through the background window too).
	Noise       int     `json:"noise"`
	NoisePerSec float64 `json:"noise_rows_per_second,omitempty"`
	// Busy: dispatch → start of one job on an idle site, and the skewed
	// drain.
	LatencySamples int     `json:"latency_samples"`
	LatencyP50ms   float64 `json:"latency_p50_ms"`
	LatencyP99ms   float64 `json:"latency_p99_ms"`
	SkewSites      int     `json:"skew_sites"`
	SkewJobs       int     `json:"skew_jobs"`
	DrainSecs      float64 `json:"drain_seconds"`
	// The site that took longest against its fair share: with k sites
	// loaded each gets 1/k of the throughput, so a site with n of the N
	// jobs is fairly done by min(1, n·k/N) of the whole drain (timed from
	// the first dispatch, the inserts included).
	WorstSite      string  `json:"worst_site"`
	WorstSiteJobs  int     `json:"worst_site_jobs"`
	WorstDrainSecs float64 `json:"worst_site_drain_seconds"`
	WorstFairSecs  float64 `json:"worst_site_fair_seconds"`
	WorstRatio     float64 `json:"worst_site_ratio"`
	// The same in jobs rather than seconds, which a drain whose pace
	// changes (fewer sites left, bigger claims) does not skew: the site
	// that finished after the most jobs of every site against min(N, n·k).
	WorstJobsSite  string  `json:"worst_site_by_jobs"`
	WorstJobsDone  int     `json:"worst_site_done_after_jobs"`
	WorstJobsFair  int     `json:"worst_site_fair_jobs"`
	WorstJobsRatio float64 `json:"worst_site_jobs_ratio"`

	// OpenJobsReadMS: reads of every site's open jobs (what a /metrics
	// scrape and /sites cost, once each 2 s at most), idle: three, each
	// past the previous one's reuse.
	OpenJobsReadMS []float64 `json:"open_jobs_read_ms,omitempty"`
}

func (a *app) benchSitesCommand() *cli.Command {
	return &cli.Command{
		Name:  "sites",
		Usage: "measure one daemon serving many idle and busy sites (databases × table prefixes)",
		Description: `Creates --sites sites, --per-database table prefixes in each of its own new
databases (queuety_bsites_<random>_N, dropped at the end) on the server of
--dsn / QUEUETY_DSN (or 127.0.0.1:3306 as root), and serves them all from one
queuety.Sites in this process, as work --sites does.

Idle: the server's statements a second (SHOW GLOBAL STATUS Questions, which
counts every client: a window without the daemon is measured first and shown
as the background), the daemon's CPU (this process) and the server's (its
/proc/<pid>/stat, when the server runs on this machine), the resident set,
the Go heap a collection then finds live and the goroutines (each also a site:
--memprofile, --cpuprofile and --goroutines say where they go), and the polls
of the batched look and the full looks their gate ran. --noise N adds a busy
neighbour: another connection writing N rows a second into a table of its own
in a database of its own, from before the background window to the end (on a
real host other databases write all the time, and the gate then opens at
every poll).
Busy: dispatch → start of one job on an idle site (--samples, each on another
site), then a skewed drain: --skew-jobs jobs over --skew-sites sites, 90 % on
the first, and the site that finished latest against its fair share.

The stale sweep, retention and workflows are off unless --loops keeps them on
at work's intervals.

--plain with --sites 1 runs one ordinary worker (work without --sites) for the
single-site comparison.

   queuety bench sites --sites 500 --per-database 10
   queuety bench sites --sites 1 --plain`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sites", Value: 500, Usage: "sites to serve"},
			&cli.IntFlag{Name: "per-database", Value: 10, Usage: "table prefixes (sites) in each database"},
			&cli.BoolFlag{Name: "plain", Usage: "with --sites 1: one ordinary worker, not queuety.Sites"},
			&cli.DurationFlag{Name: "poll-interval", Value: queuety.DefaultPollInterval, Usage: "the batched look's interval (--plain: the worker's poll)"},
			&cli.DurationFlag{Name: "idle-look-interval", Value: queuety.DefaultSitesIdleLook, Usage: "the look at least this often while no client writes (as work --sites; at least --poll-interval)"},
			&cli.IntFlag{Name: "noise", Usage: "a busy neighbour: rows a second another connection writes into a database of its own (0: none)"},
			&cli.IntFlag{Name: "concurrency", Value: 4, Usage: "each site's slots"},
			&cli.IntFlag{Name: "conns-per-server", Value: queuety.DefaultConnsPerServer, Usage: "connections the sites of the server share, whatever their database"},
			&cli.IntFlag{Name: "max-conns", Value: queuety.DefaultSitesMaxConns, Usage: "the cap over every server"},
			&cli.IntFlag{Name: "max-slots", Usage: "jobs running at once over every site (0: no cap but each site's --concurrency)"},
			&cli.DurationFlag{Name: "warmup", Value: 15 * time.Second, Usage: "wait this long after every site started before the idle window"},
			&cli.DurationFlag{Name: "idle", Value: 30 * time.Second, Usage: "the idle window (and the background window before the daemon starts)"},
			&cli.IntFlag{Name: "samples", Value: 50, Usage: "dispatch → start samples, each on another idle site"},
			&cli.IntFlag{Name: "skew-sites", Value: 10, Usage: "sites loaded in the skewed drain"},
			&cli.IntFlag{Name: "skew-jobs", Value: 2000, Usage: "jobs of the skewed drain, 90 % on one site"},
			&cli.DurationFlag{Name: "job-time", Value: 2 * time.Millisecond, Usage: "how long each job of the skewed drain works"},
			&cli.BoolFlag{Name: "loops", Usage: "keep every per-site loop on, as work --sites --retention-days 7 --log-retention-days 7 runs them: the stale sweep, retention, workflows (deadline check, wait sweep, signal poll); without it they are off"},
			cpuProfileFlag(),
			&cli.PathFlag{Name: "memprofile", Usage: "write a Go heap profile, taken at the idle window's end, to `FILE` (go tool pprof -sample_index=inuse_space)"},
			&cli.PathFlag{Name: "goroutines", Usage: "write the daemon's goroutines, grouped by stack, at the idle window's end to `FILE` (text)"},
			jsonFlag(),
		},
		Action: a.benchSites,
	}
}

// benchSites is one run: databases made, the daemon started, the idle
// window, the samples, the skewed drain, everything dropped.
func (a *app) benchSites(c *cli.Context) error {
	if c.Path("memprofile") != "" {
		// Finer than the default 512 KiB between samples: an idle site's
		// holders are a few KiB each.
		runtime.MemProfileRate = 4096
	}
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	n, per := c.Int("sites"), c.Int("per-database")
	switch {
	case n < 1 || per < 1:
		return usagef("--sites and --per-database: at least 1")
	case c.Bool("plain") && n != 1:
		return usagef("--plain: only with --sites 1")
	case c.Int("skew-sites") < 1 || c.Int("skew-sites") > n:
		return usagef("--skew-sites %d: between 1 and --sites", c.Int("skew-sites"))
	case c.Int("skew-sites") > 1 && (c.Int("skew-jobs")-c.Int("skew-jobs")*9/10)/(c.Int("skew-sites")-1) < 1:
		// A loaded site without a job would never be done.
		return usagef("--skew-jobs %d: too few for --skew-sites %d (the 10 %% beside the first site's 90 %% give each other site a job)", c.Int("skew-jobs"), c.Int("skew-sites"))
	case c.Int("noise") < 0 || c.Int("noise") > 100000:
		return usagef("--noise %d: rows a second, between 0 and 100000", c.Int("noise"))
	case c.Duration("idle-look-interval") < c.Duration("poll-interval"):
		return usagef("--idle-look-interval %s: at least --poll-interval %s", c.Duration("idle-look-interval"), c.Duration("poll-interval"))
	}
	server := cfg.DSN
	if server == "" {
		server = BenchServer
	}
	mcfg, err := mysql.ParseDSN(server)
	if err != nil {
		return usagef("--dsn: %v", err)
	}
	mcfg.DBName = ""
	admin, err := sqlx.Open("mysql", mcfg.FormatDSN())
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx := c.Context
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	tag := "queuety_bsites_" + hex.EncodeToString(rnd[:])
	b := &sitesBench{out: c.App.ErrWriter, admin: admin, runs: map[string]*siteRuns{}}
	stopWatch := b.dropOnSignal()
	defer func() { stopWatch(); b.dropAll() }()

	fmt.Fprintf(c.App.ErrWriter, "bench: creating %d sites in %d databases %s_N on %s (dropped at the end)\n", n, (n+per-1)/per, tag, mcfg.Addr)
	base := cfg
	// The sites' start and stop lines would bury the figures.
	base.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Logger = base.Logger
	base.Concurrency = c.Int("concurrency")
	if c.Bool("loops") {
		base.Workflows, base.RetentionDays, base.LogRetentionDays = true, 7, 7
	} else {
		base.RescueSchedule, base.RetentionSchedule = "off", "off"
	}
	sites, err := b.create(ctx, base, tag, n, per)
	if err != nil {
		return err
	}
	res := SitesBenchResult{Sites: n, Databases: (n + per - 1) / per, Mode: "sites", PollInterval: c.Duration("poll-interval").String(),
		Server: mcfg.Addr, Loops: c.Bool("loops"), LatencySamples: c.Int("samples"), SkewSites: c.Int("skew-sites"), SkewJobs: c.Int("skew-jobs")}
	probe, err := queuety.Open(ctx, sites[0].Config)
	if err != nil {
		return err
	}
	pid := serverPID(ctx, clientstore.Of(probe))
	probe.Close() // its connections are not the daemon's (conns)

	res.Noise = c.Int("noise")
	if res.Noise > 0 {
		stopNoise, err := b.noise(ctx, tag+"_noise", res.Noise)
		if err != nil {
			return err
		}
		defer stopNoise()
	}

	// The server's background first: the same window, no daemon.
	idle := c.Duration("idle")
	bg, err := b.window(ctx, pid, idle)
	if err != nil {
		return err
	}
	res.BackgroundPerSec, res.ServerBackgroundPc = bg.statementsPerSec, bg.serverPct

	reg := queuety.NewRegistry()
	jobTime := c.Duration("job-time")
	reg.HandleFunc(sitesBenchHandler, func(ctx context.Context, job *queuety.Job) error {
		var p struct {
			Site string `json:"site"`
			Busy bool   `json:"busy"`
		}
		if err := job.Decode(&p); err != nil {
			return err
		}
		b.started(p.Site)
		if p.Busy {
			time.Sleep(jobTime)
		}
		b.finished(p.Site)
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var served *queuety.Sites
	if c.Bool("plain") {
		res.Mode = "plain"
		sc := sites[0].Config
		sc.PollInterval = c.Duration("poll-interval")
		client, err := queuety.Open(ctx, sc)
		if err != nil {
			return err
		}
		defer client.Close()
		w, err := client.NewWorker(reg)
		if err != nil {
			return err
		}
		go func() { done <- w.Run(runCtx) }()
	} else {
		for i := range sites {
			// As work --sites: the per-site loops stretched, each site's
			// own poll the fallback of the batched look.
			sc := &sites[i].Config
			sc.SignalPollInterval = queuety.DefaultSitesSignalPoll
			sc.WaitSweepInterval = queuety.DefaultSitesWaitSweep
			sc.RegistrationHeartbeat = queuety.DefaultSitesRegistration
			sc.PollInterval = 0
		}
		s, err := queuety.NewSites(queuety.SitesConfig{
			// As work --sites: the soft memory limit grows with the sites
			// (under the single site's, the collector ran all the time:
			// 130 % of a core, idle, at 500 sites before their cost was cut).
			Discover:         limitMemoryBySites(func(context.Context) ([]queuety.Site, error) { return sites, nil }, cfg.Logger),
			Registry:         func(queuety.Site) (*queuety.Registry, error) { return reg, nil },
			Reread:           time.Hour,
			LookInterval:     c.Duration("poll-interval"),
			IdleLookInterval: c.Duration("idle-look-interval"),
			ConnsPerServer:   c.Int("conns-per-server"),
			MaxConns:         c.Int("max-conns"),
			MaxSlots:         c.Int("max-slots"),
			Logger:           cfg.Logger,
		})
		if err != nil {
			return usageError{err}
		}
		res.IdleLookInterval = c.Duration("idle-look-interval").String()
		go func() { done <- s.Run(runCtx) }()
		select {
		case <-s.Started():
		case err := <-done:
			return err
		}
		if down := s.Unreachable(); len(down) > 0 {
			return fmt.Errorf("bench: %d sites not served: %s", len(down), strings.Join(down[:min(5, len(down))], ", "))
		}
		served = s
	}
	debug.FreeOSMemory() // the schema's making is not the daemon's resident set
	time.Sleep(c.Duration("warmup"))
	stopProfile, err := startCPUProfile(c)
	if err != nil {
		return err
	}
	var looks0 queuety.SitesLooks
	if served != nil {
		looks0 = served.Looks()
	}
	noise0 := b.noiseRows.Load()
	w, err := b.window(ctx, pid, idle)
	stopProfile()
	if err != nil {
		return err
	}
	res.NoisePerSec = float64(b.noiseRows.Load()-noise0) / idle.Seconds()
	if served != nil {
		res.IdleLooks = lookDelta(served.Looks(), looks0)
	}
	res.IdleSecs = idle.Seconds()
	res.StatementsPerSec, res.DaemonCPUPct, res.ServerCPUPct, res.ServerMeasured = w.statementsPerSec, w.daemonPct, w.serverPct, pid != 0 && bg.serverOK && w.serverOK
	// The resident set as the idle daemon keeps it, before the collection
	// below returns memory to the system.
	res.RSSMiB = currentRSSMiB()
	if err := writeMemProfile(c); err != nil {
		return err
	}
	res.HeapLiveMiB, res.Goroutines = heapLiveMiB(), runtime.NumGoroutine()
	if err := writeGoroutines(c.Path("goroutines")); err != nil {
		return err
	}
	conns := func() int {
		if served != nil {
			n := 0
			for _, sv := range served.Servers() {
				n += sv.Conns
			}
			return n
		}
		n, err := store.ServerConnections(ctx, admin, strings.ReplaceAll(tag, "_", `\_`)+`\_%`)
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "bench: counting the daemon's connections: %v\n", err)
		}
		return n
	}
	res.IdleConns = conns()
	if !c.Bool("plain") {
		res.MaxPoolsOf = c.Int("conns-per-server") + 2
	}
	if served != nil {
		res.OpenJobsReadMS = openJobsReadMS(ctx, served)
	}

	if err := b.latency(ctx, sites, c.Int("samples"), &res); err != nil {
		return err
	}
	if err := b.skewed(ctx, sites[:c.Int("skew-sites")], c.Int("skew-jobs"), &res); err != nil {
		return err
	}
	res.BusyConns = conns()
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return printSitesBench(c, res)
}

const sitesBenchHandler = "bench.sites"

// sitesBench is one run's databases and what the handler saw.
type sitesBench struct {
	out   interface{ Write([]byte) (int, error) }
	admin *sqlx.DB

	noiseRows atomic.Int64 // rows the neighbour wrote (--noise)

	mu      sync.Mutex
	dbs     []string
	runs    map[string]*siteRuns
	done    int                       // jobs finished since runs was reset
	waiting map[string]chan time.Time // site → the sample waiting for its start
}

type siteRuns struct {
	n    int
	last time.Time
	// lastOf is how many jobs every site had finished when this one
	// finished its last (the run's order, whatever its pace).
	lastOf int
}

func (b *sitesBench) started(site string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.waiting[site]; ok {
		ch <- time.Now()
		delete(b.waiting, site)
	}
}

func (b *sitesBench) finished(site string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[site]
	if r == nil {
		r = &siteRuns{}
		b.runs[site] = r
	}
	r.n++
	r.last = time.Now()
	b.done++
	r.lastOf = b.done
}

// create makes the databases and every site's tables, four at a time.
func (b *sitesBench) create(ctx context.Context, base queuety.Config, tag string, n, per int) ([]queuety.Site, error) {
	sites := make([]queuety.Site, n)
	for d := 0; d*per < n; d++ {
		name := fmt.Sprintf("%s_%d", tag, d)
		if err := store.CreateDatabase(ctx, b.admin, name); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.dbs = append(b.dbs, name)
		b.mu.Unlock()
		mcfg, err := mysql.ParseDSN(serverDSN(base.DSN))
		if err != nil {
			return nil, err
		}
		mcfg.DBName = name
		for p := 0; p < per && d*per+p < n; p++ {
			i := d*per + p
			sc := base
			sc.DSN = mcfg.FormatDSN()
			setTablePrefix(&sc, fmt.Sprintf("s%d_", p))
			sites[i] = queuety.Site{Name: fmt.Sprintf("db%d/s%d_", d, p), Config: sc}
		}
	}
	sem := make(chan struct{}, 4)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, s := range sites {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sc := s.Config
			sc.MaxConns = 2
			cl, err := queuety.Open(ctx, sc)
			if err == nil {
				_, err = cl.Migrate(ctx)
				cl.Close()
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", s.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return sites, <-errs
}

func serverDSN(dsn string) string {
	if dsn == "" {
		return BenchServer
	}
	return dsn
}

// idleWindow is what one window measured.
type idleWindow struct {
	statementsPerSec     float64
	daemonPct, serverPct float64
	serverOK             bool
}

// window measures the server's statements and both processes' CPU over d.
// The bench's own reads (one Questions read counts itself) are taken off.
func (b *sitesBench) window(ctx context.Context, pid int, d time.Duration) (idleWindow, error) {
	var w idleWindow
	q0, err := store.ServerQuestions(ctx, b.admin)
	if err != nil {
		return w, err
	}
	self0 := selfCPU()
	srv0, srvErr := procCPU(pid)
	t0 := time.Now()
	time.Sleep(d)
	q1, err := store.ServerQuestions(ctx, b.admin)
	if err != nil {
		return w, err
	}
	el := time.Since(t0)
	w.statementsPerSec = float64(q1-q0-1) / el.Seconds()
	w.daemonPct = 100 * float64(selfCPU()-self0) / float64(el)
	if pid != 0 && srvErr == nil {
		if srv1, err := procCPU(pid); err == nil {
			w.serverPct, w.serverOK = 100*float64(srv1-srv0)/float64(el), true
		}
	}
	return w, nil
}

// latency dispatches one job at a time, each on another idle site, and
// times dispatch (the insert committed) → the handler's start.
func (b *sitesBench) latency(ctx context.Context, sites []queuety.Site, samples int, res *SitesBenchResult) error {
	var lat []time.Duration
	for k := range samples {
		s := sites[(k*7919)%len(sites)] // spread over the sites and the databases
		sc := s.Config
		sc.MaxConns = 2
		cl, err := queuety.Open(ctx, sc)
		if err != nil {
			return err
		}
		ch := make(chan time.Time, 1)
		b.mu.Lock()
		if b.waiting == nil {
			b.waiting = map[string]chan time.Time{}
		}
		b.waiting[s.Name] = ch
		b.mu.Unlock()
		sent := time.Now() // before the insert: the figure includes it
		_, err = cl.Dispatch(ctx, sitesBenchHandler, map[string]any{"site": s.Name})
		cl.Close()
		if err != nil {
			return err
		}
		select {
		case at := <-ch:
			lat = append(lat, at.Sub(sent))
		case <-time.After(30 * time.Second):
			return fmt.Errorf("bench: the job dispatched on %s did not start within 30s", s.Name)
		}
		time.Sleep(100 * time.Millisecond) // the site idle again
	}
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	res.LatencyP50ms, res.LatencyP99ms = pct(0.50), pct(0.99)
	return nil
}

// skewed dispatches jobs over sites, 90 % on the first and the rest shared
// by the others, interleaved, and waits for them all to finish.
func (b *sitesBench) skewed(ctx context.Context, sites []queuety.Site, jobs int, res *SitesBenchResult) error {
	want := make([]int, len(sites))
	want[0] = jobs
	if len(sites) > 1 {
		want[0] = jobs * 9 / 10
		for i := 1; i < len(sites); i++ {
			want[i] = (jobs - want[0]) / (len(sites) - 1)
		}
	}
	total := 0
	for _, w := range want {
		total += w
	}
	b.mu.Lock()
	b.runs, b.done = map[string]*siteRuns{}, 0
	b.mu.Unlock()
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(sites))
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := s.Config
			sc.MaxConns = 2
			cl, err := queuety.Open(ctx, sc)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for range want[i] {
				if _, err := cl.Dispatch(ctx, sitesBenchHandler, map[string]any{"site": s.Name, "busy": true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		b.mu.Lock()
		doneAll := true
		for i, s := range sites {
			if r := b.runs[s.Name]; r == nil || r.n < want[i] {
				doneAll = false
			}
		}
		b.mu.Unlock()
		if doneAll {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("bench: the skewed load did not drain within 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var drain time.Duration
	for _, s := range sites {
		drain = max(drain, b.runs[s.Name].last.Sub(t0))
	}
	res.DrainSecs = drain.Seconds()
	for i, s := range sites {
		fmt.Fprintf(b.out, "bench: %s: %d jobs done %.2fs after the first dispatch\n", s.Name, want[i], b.runs[s.Name].last.Sub(t0).Seconds())
	}
	k := float64(len(sites))
	for i, s := range sites {
		took := b.runs[s.Name].last.Sub(t0).Seconds()
		fair := min(1, float64(want[i])/float64(total)*k) * res.DrainSecs
		if r := took / fair; r > res.WorstRatio {
			res.WorstRatio, res.WorstSite, res.WorstSiteJobs, res.WorstDrainSecs, res.WorstFairSecs = r, s.Name, want[i], took, fair
		}
		// The same counted in jobs: a site with n jobs is fairly done once
		// min(N, n·k) jobs of every site are.
		fairJobs := min(float64(total), float64(want[i])*k)
		if r := float64(b.runs[s.Name].lastOf) / fairJobs; r > res.WorstJobsRatio {
			res.WorstJobsRatio, res.WorstJobsSite, res.WorstJobsDone, res.WorstJobsFair = r, s.Name, b.runs[s.Name].lastOf, int(fairJobs)
		}
	}
	return nil
}

// noise starts a busy neighbour: a connection of its own writing perSec
// rows a second, one INSERT each, into a table of database (made here,
// dropped with the others). stop ends it.
func (b *sitesBench) noise(ctx context.Context, database string, perSec int) (stop func(), err error) {
	if err := store.CreateDatabase(ctx, b.admin, database); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.dbs = append(b.dbs, database)
	b.mu.Unlock()
	if err := store.CreateNoiseTable(ctx, b.admin, database, "noise"); err != nil {
		return nil, err
	}
	conn, err := b.admin.Connx(ctx)
	if err != nil {
		return nil, err
	}
	nctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close()
		t := time.NewTicker(time.Second / time.Duration(perSec))
		defer t.Stop()
		for {
			select {
			case <-nctx.Done():
				return
			case <-t.C:
			}
			if err := store.WriteNoise(nctx, conn, database, "noise"); err != nil {
				if nctx.Err() == nil {
					fmt.Fprintf(b.out, "bench: the neighbour's write failed: %v\n", err)
				}
				return
			}
			b.noiseRows.Add(1)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// lookDelta is what the looks counted between two readings.
func lookDelta(a, b queuety.SitesLooks) queuety.SitesLooks {
	return queuety.SitesLooks{Polls: a.Polls - b.Polls, Looks: a.Looks - b.Looks, Writes: a.Writes - b.Writes,
		Changed: a.Changed - b.Changed, Interval: a.Interval - b.Interval, Blind: a.Blind - b.Blind}
}

// dropAll drops every database the run created.
func (b *sitesBench) dropAll() {
	b.mu.Lock()
	dbs := b.dbs
	b.dbs = nil
	b.mu.Unlock()
	for _, name := range dbs {
		if err := store.DropDatabase(context.Background(), b.admin, name); err != nil {
			fmt.Fprintf(b.out, "bench: could not drop database %s (%v): drop it by hand\n", name, err)
		}
	}
}

// dropOnSignal drops the run's databases when SIGINT or SIGTERM stops it.
func (b *sitesBench) dropOnSignal() (stop func()) {
	ctx, cancel := notifyContext(context.Background())
	quit := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-quit: // stop cancels the context too, after quit
				return
			default:
			}
			fmt.Fprintln(b.out, "bench: stopped: dropping the sites' databases")
			b.dropAll()
			os.Exit(130)
		case <-quit:
		}
	}()
	return func() { close(quit); cancel() }
}

// writeGoroutines writes the --goroutines listing, if asked for: which
// loops an idle site keeps, by count.
func writeGoroutines(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--goroutines: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		return fmt.Errorf("--goroutines: %w", err)
	}
	return nil
}

// heapLiveMiB is the heap a collection run now finds live.
func heapLiveMiB() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

// currentRSSMiB reads VmRSS, the process's resident set now.
func currentRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

func printSitesBench(c *cli.Context, res SitesBenchResult) error {
	if c.Bool("json") {
		return printJSON(c, res)
	}
	w := c.App.Writer
	server := "server CPU n/a (not on this machine)"
	if res.ServerMeasured {
		server = fmt.Sprintf("server CPU %.1f %% (background %.1f %%)", res.ServerCPUPct, res.ServerBackgroundPc)
	}
	loops := "stale sweep, retention and workflows off"
	if res.Loops {
		loops = "every loop on"
	}
	fmt.Fprintf(w, "%d sites (%s, %d databases, look every %s, %s) on %s\n", res.Sites, res.Mode, res.Databases, res.PollInterval, loops, res.Server)
	fmt.Fprintf(w, "idle %.0fs: %.1f statements/s (background %.1f/s), daemon CPU %.1f %%, %s, RSS %.1f MiB\n",
		res.IdleSecs, res.StatementsPerSec, res.BackgroundPerSec, res.DaemonCPUPct, server, res.RSSMiB)
	fmt.Fprintf(w, "idle heap: %.1f MiB live, %d goroutines (%.0f KiB and %.1f goroutines a site)\n",
		res.HeapLiveMiB, res.Goroutines, res.HeapLiveMiB*1024/float64(res.Sites), float64(res.Goroutines)/float64(res.Sites))
	if l := res.IdleLooks; res.Mode == "sites" {
		fmt.Fprintf(w, "idle looks (at least every %s): %d full looks in %d polls (writes %d, interval %d, sites changed %d, blind %d)\n",
			res.IdleLookInterval, l.Looks, l.Polls, l.Writes, l.Interval, l.Changed, l.Blind)
	}
	if res.Noise > 0 {
		fmt.Fprintf(w, "neighbour: %d rows/s asked, %.1f written over the idle window\n", res.Noise, res.NoisePerSec)
	}
	fmt.Fprintf(w, "dispatch->start on an idle site (%d samples): p50 %.1f ms, p99 %.1f ms\n", res.LatencySamples, res.LatencyP50ms, res.LatencyP99ms)
	fmt.Fprintf(w, "skewed drain, %d jobs over %d sites (90 %% on one): %.2fs; worst against its fair share: %s (%d jobs) %.2fs vs %.2fs = %.2fx\n",
		res.SkewJobs, res.SkewSites, res.DrainSecs, res.WorstSite, res.WorstSiteJobs, res.WorstDrainSecs, res.WorstFairSecs, res.WorstRatio)
	fmt.Fprintf(w, "  counted in jobs: %s finished after %d jobs of every site vs a fair %d = %.2fx\n",
		res.WorstJobsSite, res.WorstJobsDone, res.WorstJobsFair, res.WorstJobsRatio)
	if len(res.OpenJobsReadMS) > 0 {
		reads := make([]string, len(res.OpenJobsReadMS))
		for i, ms := range res.OpenJobsReadMS {
			reads[i] = fmt.Sprintf("%.1f", ms)
		}
		fmt.Fprintf(w, "open jobs of every site (/metrics, /sites; one statement a server): %s ms a read\n", strings.Join(reads, ", "))
	}
	capped := ""
	if res.MaxPoolsOf > 0 {
		capped = fmt.Sprintf("; its pools may open %d", res.MaxPoolsOf)
	}
	fmt.Fprintf(w, "daemon connections: %d open idle, %d after the skewed drain%s\n", res.IdleConns, res.BusyConns, capped)
	return nil
}
