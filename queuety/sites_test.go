package queuety

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// siteRuns counts handler runs by site and job id.
type siteRuns struct {
	mu   sync.Mutex
	runs map[string]int // "site/id"
}

func (c *siteRuns) registry() *Registry {
	reg := NewRegistry()
	reg.Register("count", HandlerFunc(func(_ context.Context, j *Job) error {
		var p struct {
			Site string `json:"site"`
		}
		if err := j.Decode(&p); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.runs[fmt.Sprintf("%s/%d", p.Site, j.ID)]++
		return nil
	}))
	return reg
}

func (c *siteRuns) count() (total int, twice []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.runs {
		total += n
		if n > 1 {
			twice = append(twice, k)
		}
	}
	return total, twice
}

// siteClient opens a client on one prefix of dsn and creates its Queuety
// tables, as activating the plugin on a subsite does.
func siteClient(t *testing.T, dsn, prefix string) *Client {
	t.Helper()
	c, err := Open(context.Background(), Config{DSN: dsn, TablePrefix: prefix, Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Migrate(context.Background())
	require.NoError(t, err)
	return c
}

func dispatchToSite(t *testing.T, c *Client, site string, n int) {
	t.Helper()
	for range n {
		_, err := c.Dispatch(context.Background(), "count", map[string]any{"site": site})
		require.NoError(t, err)
	}
}

func runSites(t *testing.T, cfg SitesConfig) *Sites {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	s, err := NewSites(cfg)
	require.NoError(t, err)
	goRun(t, context.Background(), s)
	return s
}

// goRun runs s until the test ends, then checks its Run returned no error.
func goRun(t *testing.T, ctx context.Context, s *Sites) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// goRunStarted is goRun, returning once every site was first tried, none
// of them unreachable: what a test that counts or measures starts from.
func goRunStarted(t *testing.T, ctx context.Context, s *Sites) {
	t.Helper()
	goRun(t, ctx, s)
	<-s.Started()
	require.Empty(t, s.Unreachable())
}

func siteState(s *Sites, name string) string {
	for _, st := range s.Status() {
		if st.Name == name {
			return st.State
		}
	}
	return ""
}

// TestSitesServeNetwork: one Sites serves every subsite of a multisite
// network from wp_blogs (the main site on wp_, blog N on wp_N_), each job
// once; a subsite without Queuety tables and an archived one are left out;
// a subsite added during the run is served after the next re-read, and one
// archived during the run is no longer served.
func TestSitesServeNetwork(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/", "/c/", "/d/", "/no-plugin/", "/archived/")
	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec("UPDATE wp_blogs SET archived = 1 WHERE path = '/archived/'")
	require.NoError(t, err)

	clients := map[string]*Client{}
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_", "wp_5_", "wp_7_"} { // blog 6 has no tables
		clients[p] = siteClient(t, dsn, p)
		dispatchToSite(t, clients[p], p, 8)
	}
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	s := runSites(t, SitesConfig{
		Discover: NetworkSites(Config{DSN: dsn, TablePrefix: "wp_", RescueSchedule: "off", ShutdownGrace: 5 * time.Second, Logger: testLogger()}),
		Registry: func(Site) (*Registry, error) { return reg, nil },
		Reread:   100 * time.Millisecond, LookInterval: 10 * time.Millisecond,
	})
	waitFor(t, time.Minute, "the five served sites' 40 jobs", func() bool { n, _ := counter.count(); return n >= 40 })
	names := []string{}
	for _, st := range s.Status() {
		names = append(names, st.Name)
		require.Equal(t, SiteRunning, st.State, st.Name)
	}
	require.Equal(t, []string{"blog 1", "blog 2", "blog 3", "blog 4", "blog 5"}, names, "blog 6 has no tables, blog 7 is archived")
	require.Equal(t, 8, countStatus(t, clients["wp_7_"], "pending"), "an archived subsite's jobs are left alone")

	// A subsite created during the run, its plugin activated, work dispatched.
	id := testdb.AddBlog(t, dsn, "wp_", "/new/")
	prefix := fmt.Sprintf("wp_%d_", id)
	dispatchToSite(t, siteClient(t, dsn, prefix), prefix, 8)
	// And one archived.
	_, err = db.Exec("UPDATE wp_blogs SET archived = 1 WHERE blog_id = 5")
	require.NoError(t, err)
	waitFor(t, time.Minute, "the new subsite's jobs", func() bool { n, _ := counter.count(); return n >= 48 })
	waitFor(t, time.Minute, "blog 5 no longer served", func() bool { return siteState(s, "blog 5") == "" })
	dispatchToSite(t, clients["wp_5_"], "wp_5_", 3)
	dispatchToSite(t, clients["wp_2_"], "wp_2_", 3)
	waitFor(t, time.Minute, "blog 2's new jobs", func() bool { return countStatus(t, clients["wp_2_"], "completed") == 11 })

	total, twice := counter.count()
	require.Empty(t, twice, "jobs run twice")
	require.Equal(t, 51, total)
	require.Equal(t, 3, countStatus(t, clients["wp_5_"], "pending"), "an archived subsite's new jobs are left alone")
	for _, p := range []string{"wp_", "wp_2_", "wp_3_", "wp_4_"} {
		require.Zero(t, countStatus(t, clients[p], "pending"), p)
	}
}

// TestSitesOneDatabaseDown: the database of one site disappears while
// sites on the same server and in another database keep draining; the
// lost site is reported unreachable, and served again once it is back.
func TestSitesOneDatabaseDown(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := testdb.New(t), testdb.New(t)
	a := siteClient(t, dsnA, "wp_")
	b := siteClient(t, dsnB, "wp_")
	b2 := siteClient(t, dsnB, "wp_2_")
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	site := func(name, dsn, prefix string) Site {
		return Site{Name: name, Config: Config{DSN: dsn, TablePrefix: prefix, RescueSchedule: "off", ShutdownGrace: 5 * time.Second, Logger: testLogger()}}
	}
	s := runSites(t, SitesConfig{
		Discover: func(context.Context) ([]Site, error) {
			return []Site{site("a", dsnA, "wp_"), site("b", dsnB, "wp_"), site("b2", dsnB, "wp_2_")}, nil
		},
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 10 * time.Millisecond, Retry: 50 * time.Millisecond,
	})
	dispatchToSite(t, a, "a", 3)
	waitFor(t, time.Minute, "site a's jobs", func() bool { return countStatus(t, a, "completed") == 3 })

	// Site a's jobs table goes (its database restored from an old dump,
	// a DROP by mistake): every statement on it fails.
	adminA, err := sqlx.Open("mysql", dsnA)
	require.NoError(t, err)
	t.Cleanup(func() { _ = adminA.Close() })
	_, err = adminA.Exec("RENAME TABLE wp_queuety_jobs TO wp_queuety_jobs_gone")
	require.NoError(t, err)
	waitFor(t, time.Minute, "site a reported", func() bool { return siteState(s, "a") == SiteUnreachable })
	require.Equal(t, []string{"a"}, s.Unreachable(), "%+v", s.Status())

	dispatchToSite(t, b, "b", 20)
	dispatchToSite(t, b2, "b2", 20)
	waitFor(t, time.Minute, "sites b and b2 drain", func() bool {
		return countStatus(t, b, "completed") == 20 && countStatus(t, b2, "completed") == 20
	})
	require.Equal(t, SiteRunning, siteState(s, "b"))

	_, err = adminA.Exec("RENAME TABLE wp_queuety_jobs_gone TO wp_queuety_jobs")
	require.NoError(t, err)
	dispatchToSite(t, a, "a", 2)
	waitFor(t, time.Minute, "site a served again", func() bool { return countStatus(t, a, "completed") == 5 })
	waitFor(t, time.Minute, "site a reported running", func() bool { return siteState(s, "a") == SiteRunning })
	total, twice := counter.count()
	require.Empty(t, twice)
	require.Equal(t, 45, total)
}

// TestSitesStalledSiteDoesNotStarveOthers: a site whose every slot is held
// by a hung handler, with a backlog behind it, holds up no other site on
// the same database: they drain while it stays stuck.
func TestSitesStalledSiteDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	heavy := siteClient(t, dsn, "wp_")
	light := siteClient(t, dsn, "wp_2_")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	runs := map[int64]int{}
	reg := NewRegistry()
	reg.Register("hang", HandlerFunc(func(ctx context.Context, j *Job) error {
		<-release
		return nil
	}))
	reg.Register("quick", HandlerFunc(func(_ context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.ID]++
		return nil
	}))
	for range 50 {
		_, err := heavy.Dispatch(context.Background(), "hang", nil)
		require.NoError(t, err)
	}
	site := func(name, prefix string) Site {
		return Site{Name: name, Config: Config{DSN: dsn, TablePrefix: prefix, Concurrency: 4, RescueSchedule: "off", ShutdownGrace: time.Second, Logger: testLogger()}}
	}
	s := runSites(t, SitesConfig{
		Discover: func(context.Context) ([]Site, error) {
			return []Site{site("heavy", "wp_"), site("light", "wp_2_")}, nil
		},
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 10 * time.Millisecond,
	})
	waitFor(t, time.Minute, "the heavy site's slots all hung", func() bool { return countStatus(t, heavy, "processing") == 4 })
	for range 30 {
		_, err := light.Dispatch(context.Background(), "quick", nil)
		require.NoError(t, err)
	}
	waitFor(t, time.Minute, "the light site drains", func() bool { return countStatus(t, light, "completed") == 30 })
	require.Equal(t, 4, countStatus(t, heavy, "processing"), "the heavy site keeps to its slot cap")
	require.Equal(t, 46, countStatus(t, heavy, "pending"))
	mu.Lock()
	for id, n := range runs {
		require.Equal(t, 1, n, "job %d", id)
	}
	mu.Unlock()
	require.Equal(t, SiteRunning, siteState(s, "light"))
	once.Do(func() { close(release) })
}
