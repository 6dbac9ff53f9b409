package queuety

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// TestSitesOneServerOnePool: nine sites in three databases of one server
// (three prefixes each) are served on one pool of four connections, in no
// database of theirs: every site's jobs run once, a failed attempt is
// retried, a three-step workflow runs to its end, the retention sweep
// removes each site's old row and nothing else; and the group and
// retention locks of a served site are the ones a single-site daemon on
// it takes, so the two exclude each other.
func TestSitesOneServerOnePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	runs := map[string]int{}  // "prefix/id" of each count run
	tries := map[string]int{} // attempts of each site's flaky job
	reg := NewRegistry()
	site := func(j *Job) string {
		var p struct {
			Site string `json:"site"`
		}
		require.NoError(t, j.Decode(&p))
		return p.Site
	}
	reg.HandleFunc("count", func(_ context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		runs[fmt.Sprintf("%s/%d", site(j), j.ID)]++
		return nil
	})
	reg.HandleFunc("flaky", func(_ context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		if tries[site(j)]++; j.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}, WithMaxAttempts(3), WithBackoff(Backoff{List: []int{0}}))
	reg.RegisterStep("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		return wfObj(t, "n", intValue(n)+1), nil
	})

	type fixture struct {
		c             *Client
		old, flaky    int64
		workflow      int64
		database, key string
	}
	var sites []Site
	fixtures := map[string]*fixture{}
	for d := range 3 {
		dsn := testdb.New(t)
		_, database, err := store.ServerOf(dsn)
		require.NoError(t, err)
		for p := range 3 {
			prefix := fmt.Sprintf("s%d_", p)
			key := fmt.Sprintf("d%d/%s", d, prefix)
			f := &fixture{c: smallSiteClient(t, dsn, prefix), database: database, key: key}
			fixtures[key] = f
			dispatchToSite(t, f.c, key, 5)
			j, err := f.c.Dispatch(ctx, "flaky", map[string]any{"site": key})
			require.NoError(t, err)
			f.flaky = j.ID
			f.workflow, _, err = f.c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("inc").Then("IncStep").Then("IncStep").Then("IncStep"), wfObj(t, "n", 0)))
			require.NoError(t, err)
			res, err := f.c.store.DB().Exec("INSERT INTO `" + f.c.store.Tables()["jobs"] + "` (queue, handler, payload, priority, status, attempts, max_attempts, available_at, created_at, completed_at) " +
				"VALUES ('default', 'count', '{}', 0, 'completed', 1, 3, NOW() - INTERVAL 3 DAY, NOW() - INTERVAL 3 DAY, NOW() - INTERVAL 3 DAY)")
			require.NoError(t, err)
			f.old, err = res.LastInsertId()
			require.NoError(t, err)
			sites = append(sites, Site{Name: key, Config: Config{DSN: dsn, TablePrefix: prefix, Concurrency: 2, RescueSchedule: "off",
				Workflows: true, RetentionDays: 1, RetentionSchedule: "@every 1s", ShutdownGrace: 5 * time.Second, Logger: testLogger()}})
		}
	}
	var served sync.Map // site name → its *Client under Sites
	s := runSites(t, SitesConfig{
		Discover:       func(context.Context) ([]Site, error) { return sites, nil },
		Registry:       func(Site) (*Registry, error) { return reg, nil },
		Started:        func(site Site, c *Client, _ *Worker) { served.Store(site.Name, c) },
		LookInterval:   10 * time.Millisecond,
		ConnsPerServer: 4,
	})
	<-s.Started()
	require.Empty(t, s.Unreachable())

	waitFor(t, 2*time.Minute, "every site's jobs, workflow and sweep", func() bool {
		for _, f := range fixtures {
			if countStatus(t, f.c, store.StatusPending) > 0 || countStatus(t, f.c, store.StatusProcessing) > 0 {
				return false
			}
			st, err := f.c.WorkflowStatus(ctx, f.workflow)
			require.NoError(t, err)
			if st.Status != workflow.StatusCompleted {
				return false
			}
			if _, err := f.c.store.GetJob(ctx, f.old); !errors.Is(err, store.ErrJobNotFound) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	require.Len(t, runs, 9*5)
	for k, n := range runs {
		require.Equal(t, 1, n, "job %s", k)
	}
	for key, f := range fixtures {
		require.Equal(t, 2, tries[key], "%s: the flaky job failed once, then ran again", key)
		require.Equal(t, store.StatusCompleted, jobRow(t, f.c, f.flaky).Status, key)
		st, err := f.c.WorkflowStatus(ctx, f.workflow)
		require.NoError(t, err)
		state, ok := st.State.AsObject()
		require.True(t, ok, key)
		n, _ := state.Get("n")
		require.Equal(t, int64(3), intValue(n), key)
	}
	mu.Unlock()

	// One pool for the server: four connections promised for nine sites
	// in three databases, and no more open than it and the look's two.
	servers := s.Servers()
	require.Len(t, servers, 1)
	require.Equal(t, 9, servers[0].Sites)
	require.LessOrEqual(t, servers[0].Conns, 4+2)
	s.mu.Lock()
	require.Equal(t, 4, s.conns)
	require.Len(t, s.pools, 1)
	s.mu.Unlock()

	// A served site's locks are its single-site daemon's: each holds the
	// other off.
	for key, f := range fixtures {
		v, ok := served.Load(key)
		require.True(t, ok, key)
		pooled := v.(*Client).store
		require.NotSame(t, f.c.store.DB(), pooled.DB())
		for _, pair := range [][2]*store.Store{{pooled, f.c.store}, {f.c.store, pooled}} {
			a, err := pair[0].BeginClaim(ctx)
			require.NoError(t, err)
			locked, err := a.LockGroups(ctx, []string{"api"}, time.Second)
			require.NoError(t, err)
			require.Equal(t, []string{"api"}, locked, key)
			b, err := pair[1].BeginClaim(ctx)
			require.NoError(t, err)
			locked, err = b.LockGroups(ctx, []string{"api"}, 0)
			require.NoError(t, err)
			require.Empty(t, locked, "%s: the group's lock is held by the other", key)
			require.NoError(t, b.Rollback())
			require.NoError(t, a.Rollback())
		}
	}
	// The retention lock: a served site holding it keeps the single-site
	// daemon's sweep off, and no other site's is the same. (The served
	// sites sweep every second: a lock is taken once their sweep is done.)
	take := func(s *store.Store) func() {
		var release func()
		waitFor(t, 10*time.Second, "a retention lock between sweeps", func() bool {
			r, ok, err := s.RetentionLock(ctx)
			require.NoError(t, err)
			release = r
			return ok
		})
		return release
	}
	v, _ := served.Load("d1/s2_")
	release := take(v.(*Client).store)
	_, ok, err := fixtures["d1/s2_"].c.store.RetentionLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "the site's sweep is under way on the pool")
	take(fixtures["d2/s2_"].c.store)() // same prefix, another database: its own lock
	release()
}
