package queuety

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// listing is a Discover whose sites a test changes between re-reads.
type listing struct {
	mu    sync.Mutex
	sites map[string]Site
}

func (l *listing) set(s Site) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sites[s.Name] = s
}

func (l *listing) discover(context.Context) ([]Site, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Site, 0, len(l.sites))
	for _, s := range l.sites {
		out = append(out, s)
	}
	return out, nil
}

// starts records each site's worker starts and the stale timeout each ran
// with.
type starts struct {
	mu    sync.Mutex
	stale map[string][]time.Duration
}

func (s *starts) started(site Site, _ *Client, w *Worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale[site.Name] = append(s.stale[site.Name], w.cfg.StaleTimeout)
}

func (s *starts) of(name string) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.stale[name]...)
}

func siteStatus(s *Sites, name string) SiteStatus {
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	return SiteStatus{}
}

// TestSitesRestartOnChangedSettings: a re-read that finds a site's
// settings changed restarts that site alone with them, its running job
// finishing first (once); a served site whose new listing is refused keeps
// running on its settings and says why; a new site with refused settings
// is reported and not started until its listing is fixed.
func TestSitesRestartOnChangedSettings(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	a, b, c := siteClient(t, dsn, "wp_"), siteClient(t, dsn, "wp_2_"), siteClient(t, dsn, "wp_3_")
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	began := make(chan struct{}, 1)
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	reg.Register("slow", HandlerFunc(func(context.Context, *Job) error {
		began <- struct{}{}
		<-release
		return nil
	}))
	site := func(name, prefix string, stale time.Duration) Site {
		return Site{Name: name, Config: Config{DSN: dsn, TablePrefix: prefix, StaleTimeout: stale, RescueSchedule: "off",
			ShutdownGrace: time.Minute, Logger: testLogger()}}
	}
	list := &listing{sites: map[string]Site{"a": site("a", "wp_", 600*time.Second), "b": site("b", "wp_2_", 600*time.Second)}}
	st := &starts{stale: map[string][]time.Duration{}}
	s := runSites(t, SitesConfig{
		Discover: list.discover, Registry: func(Site) (*Registry, error) { return reg, nil }, Started: st.started,
		Reread: time.Hour, Retry: 10 * time.Millisecond, LookInterval: 10 * time.Millisecond,
	})
	<-s.Started()
	_, err := a.Dispatch(context.Background(), "slow", nil)
	require.NoError(t, err)
	<-began

	// Site a's stale timeout changes while its job runs.
	list.set(site("a", "wp_", time.Hour))
	s.Reread()
	releaseOnce.Do(func() { close(release) })
	waitFor(t, time.Minute, "site a restarted", func() bool { return len(st.of("a")) == 2 })
	require.Equal(t, []time.Duration{600 * time.Second, time.Hour}, st.of("a"), "the new worker runs with the new settings")
	require.Equal(t, 1, countStatus(t, a, "completed"), "the running job finished as on a stop")
	require.Equal(t, 1, queryInt(t, a, "SELECT MAX(attempts) FROM wp_queuety_jobs"), "and ran once")
	dispatchToSite(t, a, "a", 3)
	dispatchToSite(t, b, "b", 3)
	waitFor(t, time.Minute, "both sites serve", func() bool {
		return countStatus(t, a, "completed") == 4 && countStatus(t, b, "completed") == 3
	})
	require.Len(t, st.of("b"), 1, "site b, unchanged, was left alone")

	// Site a's listing now refused: it keeps its worker and says why. A
	// new site c, refused: reported, not started.
	bad := site("a", "wp_", 0)
	bad.Err = errors.New("QUEUETY_STALE_TIMEOUT (wp-config line 3) 0: must be at least 1 second")
	list.set(bad)
	badC := site("c", "wp_3_", 600*time.Second)
	badC.Err = errors.New("QUEUETY_MAX_EXECUTION_TIME (wp-config line 4): want a number of seconds, not an array")
	list.set(badC)
	dispatchToSite(t, c, "c", 2)
	s.Reread()
	waitFor(t, time.Minute, "site a's refused listing reported", func() bool { return siteStatus(s, "a").Refused != "" })
	require.Equal(t, SiteRunning, siteStatus(s, "a").State)
	require.Contains(t, siteStatus(s, "a").Refused, "QUEUETY_STALE_TIMEOUT")
	require.Equal(t, SiteFailed, siteStatus(s, "c").State)
	require.Contains(t, siteStatus(s, "c").Error, "QUEUETY_MAX_EXECUTION_TIME")
	require.Contains(t, s.Unreachable(), "c")
	dispatchToSite(t, a, "a", 1)
	waitFor(t, time.Minute, "site a still serves", func() bool { return countStatus(t, a, "completed") == 5 })
	require.Len(t, st.of("a"), 2, "not restarted for a refused listing")
	require.Empty(t, st.of("c"))
	require.Equal(t, 2, countStatus(t, c, "pending"))

	// Both fixed: a runs on (its settings are those it has), c starts.
	list.set(site("a", "wp_", time.Hour))
	list.set(site("c", "wp_3_", 600*time.Second))
	s.Reread()
	waitFor(t, time.Minute, "site c served", func() bool { return countStatus(t, c, "completed") == 2 })
	require.Empty(t, siteStatus(s, "a").Refused)
	require.Len(t, st.of("a"), 2)
	total, twice := counter.count()
	require.Empty(t, twice, "jobs run twice")
	require.Equal(t, 3+3+1+2, total)
}

func queryInt(t *testing.T, c *Client, query string) int {
	t.Helper()
	var n int
	require.NoError(t, c.store.DB().Get(&n, query))
	return n
}

// runSitesToEnd runs a Sites that stops on its own and returns its
// summary.
func runSitesToEnd(t *testing.T, cfg SitesConfig) SitesSummary {
	t.Helper()
	cfg.Logger = testLogger()
	s, err := NewSites(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, s.Run(ctx))
	require.NoError(t, ctx.Err(), "Run stopped on its own, not at the test's deadline")
	return s.Summary()
}

// TestSitesMaxJobsShared: MaxJobs is one budget over every site: three
// sites with 20 jobs each, eight slots each, run 7 jobs in all, each once,
// and Run stops by itself.
func TestSitesMaxJobsShared(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	prefixes := []string{"wp_", "wp_2_", "wp_3_"}
	clients := map[string]*Client{}
	var sites []Site
	for _, p := range prefixes {
		clients[p] = siteClient(t, dsn, p)
		dispatchToSite(t, clients[p], p, 20)
		sites = append(sites, Site{Name: p, Config: Config{DSN: dsn, TablePrefix: p, Concurrency: 8, RescueSchedule: "off", Logger: testLogger()}})
	}
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	sum := runSitesToEnd(t, SitesConfig{
		Discover: func(context.Context) ([]Site, error) { return sites, nil },
		Registry: func(Site) (*Registry, error) { return reg, nil },
		MaxJobs:  7, LookInterval: 10 * time.Millisecond,
	})
	total, twice := counter.count()
	require.Empty(t, twice)
	require.Equal(t, 7, total, "seven handler runs over the three sites")
	require.Equal(t, "max-jobs", sum.Stopped)
	require.EqualValues(t, 7, sum.total().Completed)
	done := 0
	for _, p := range prefixes {
		done += countStatus(t, clients[p], "completed")
		require.Zero(t, countStatus(t, clients[p], "processing"), p)
	}
	require.Equal(t, 7, done)
	require.Empty(t, sum.NotServed())
}

// TestSitesStopWhenEmpty: with StopWhenEmpty, Run stops once every site
// it serves is drained (each job once), not waiting for a site whose
// settings are refused, which the summary names; with each site's
// MaxJobs 1 (work --once), every site runs one job.
func TestSitesStopWhenEmpty(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	prefixes := []string{"wp_", "wp_2_", "wp_3_"}
	clients := map[string]*Client{}
	for _, p := range prefixes {
		clients[p] = siteClient(t, dsn, p)
		dispatchToSite(t, clients[p], p, 5)
	}
	bad := siteClient(t, dsn, "wp_4_")
	dispatchToSite(t, bad, "wp_4_", 5)
	list := func(maxJobs int) func(context.Context) ([]Site, error) {
		return func(context.Context) ([]Site, error) {
			var out []Site
			for _, p := range prefixes {
				out = append(out, Site{Name: p, Config: Config{DSN: dsn, TablePrefix: p, MaxJobs: maxJobs, RescueSchedule: "off", Logger: testLogger()}})
			}
			return append(out, Site{Name: "wp_4_", Config: Config{DSN: dsn, TablePrefix: "wp_4_"}, Err: errors.New("QUEUETY_STALE_TIMEOUT: refused")}), nil
		}
	}
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()

	// work --once: one job a site.
	sum := runSitesToEnd(t, SitesConfig{Discover: list(1), Registry: func(Site) (*Registry, error) { return reg, nil }, StopWhenEmpty: true})
	require.Equal(t, "empty", sum.Stopped)
	for _, p := range prefixes {
		require.Equal(t, 1, countStatus(t, clients[p], "completed"), p)
	}
	require.Equal(t, []string{"wp_4_"}, sum.NotServed())

	// flush: every site drained.
	sum = runSitesToEnd(t, SitesConfig{Discover: list(0), Registry: func(Site) (*Registry, error) { return reg, nil }, StopWhenEmpty: true})
	require.Equal(t, "empty", sum.Stopped)
	for _, p := range prefixes {
		require.Equal(t, 5, countStatus(t, clients[p], "completed"), p)
	}
	require.EqualValues(t, 12, sum.total().Completed)
	total, twice := counter.count()
	require.Empty(t, twice)
	require.Equal(t, 15, total)
	require.Equal(t, 5, countStatus(t, bad, "pending"), "the refused site was not served")
	require.Equal(t, []string{"wp_4_"}, sum.NotServed())
}

// TestSitesKeepChecksWeight: a listing that changes only a site's Weight
// restarts it (its share of MaxSlots is taken when its worker starts), and
// one that changes nothing keeps it.
func TestSitesKeepChecksWeight(t *testing.T) {
	t.Parallel()
	s, err := NewSites(SitesConfig{Discover: func(context.Context) ([]Site, error) { return nil, nil }, Logger: testLogger()})
	require.NoError(t, err)
	site := Site{Name: "a", Config: Config{DSN: "root@tcp(127.0.0.1:3306)/a", TablePrefix: "wp_"}, Weight: 1}
	r := &siteRun{site: site}
	require.True(t, s.keep(r, site), "the same listing")
	heavier := site
	heavier.Weight = 3
	require.False(t, s.keep(r, heavier), "a new Weight restarts the site")
}

// TestSitesStopWhenEmptyDatabaseDown: with StopWhenEmpty, a started site
// whose database stops answering during the run (its jobs table gone) is
// not waited for: Run stops once the other site is drained, and the
// summary names the lost site with why.
func TestSitesStopWhenEmptyDatabaseDown(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := testdb.New(t), testdb.New(t)
	a, b := siteClient(t, dsnA, "wp_"), siteClient(t, dsnB, "wp_")
	dispatchToSite(t, a, "a", 2)
	dispatchToSite(t, b, "b", 3)
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	reg.Register("hold", HandlerFunc(func(context.Context, *Job) error { <-release; return nil }))
	_, err := b.Dispatch(context.Background(), "hold", nil) // keeps the run going until the test lets it end
	require.NoError(t, err)
	site := func(name, dsn string) Site {
		return Site{Name: name, Config: Config{DSN: dsn, TablePrefix: "wp_", RescueSchedule: "off", ShutdownGrace: 5 * time.Second, Logger: testLogger()}}
	}
	s, err := NewSites(SitesConfig{
		Discover:      func(context.Context) ([]Site, error) { return []Site{site("a", dsnA), site("b", dsnB)}, nil },
		Registry:      func(Site) (*Registry, error) { return reg, nil },
		LookInterval:  10 * time.Millisecond,
		StopWhenEmpty: true,
		Logger:        testLogger(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, time.Minute, "site a's jobs and b's held one", func() bool {
		return countStatus(t, a, "completed") == 2 && countStatus(t, b, "processing") == 1
	})

	admin, err := sqlx.Open("mysql", dsnA)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	_, err = admin.Exec("RENAME TABLE wp_queuety_jobs TO wp_queuety_jobs_gone")
	require.NoError(t, err)
	waitFor(t, time.Minute, "site a reported", func() bool { return siteState(s, "a") == SiteUnreachable })
	once.Do(func() { close(release) })

	require.NoError(t, <-done)
	require.NoError(t, ctx.Err(), "Run stopped on its own, not at the test's deadline")
	sum := s.Summary()
	require.Equal(t, "empty", sum.Stopped)
	require.Equal(t, []string{"a"}, sum.NotServed())
	require.Contains(t, sum.Sites[0].Error, "wp_queuety_jobs")
	require.Equal(t, 4, countStatus(t, b, "completed"))
	total, twice := counter.count()
	require.Empty(t, twice)
	require.Equal(t, 5, total)
}
