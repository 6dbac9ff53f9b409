package queuety

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/workflow"
)

// downPHP is a site's PHP pool that cannot start until up is set: every
// read of a class's settings fails with ErrPHPDown, as a poolset pool does
// once its start failed again at its retry.
type downPHP struct {
	up  atomic.Bool
	mu  sync.Mutex
	ran map[int64]int
}

func (f *downPHP) Handle(_ context.Context, j *Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran[j.ID]++
	return nil
}

func (f *downPHP) runs() (total int, twice []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, n := range f.ran {
		total += n
		if n > 1 {
			twice = append(twice, id)
		}
	}
	return total, twice
}

func (f *downPHP) HandlerMetadata(string) workflow.HandlerMetadata { return workflow.HandlerMetadata{} }

func (f *downPHP) PeekClassMetadata(string) (workflow.HandlerMetadata, bool) {
	return workflow.HandlerMetadata{}, f.up.Load()
}

func (f *downPHP) ClassMetadata(context.Context, string) (workflow.HandlerMetadata, error) {
	if !f.up.Load() {
		return workflow.HandlerMetadata{}, fmt.Errorf("the site's PHP pool failed to start 2 times in a row: bootstrap exited: %w", ErrPHPDown)
	}
	return workflow.HandlerMetadata{}, nil
}

// TestSitesDrainLeavesSiteWhosePHPIsDown: StopWhenEmpty does not wait for
// the PHP jobs of a site whose PHP cannot run (ErrPHPDown): its Go jobs
// run, its PHP jobs stay pending with their attempts unspent, the other
// sites are drained (each job once), and the summary names the site with
// why. So do a run of one job a site (work --once) and a shared MaxJobs
// budget. Once its PHP runs again, a drain runs them, once each, and
// names no site.
func TestSitesDrainLeavesSiteWhosePHPIsDown(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	prefixes := []string{"wp_", "wp_2_", "wp_3_"}
	clients := map[string]*Client{}
	for _, p := range prefixes {
		clients[p] = siteClient(t, dsn, p)
		dispatchToSite(t, clients[p], p, 3)
	}
	down := clients["wp_3_"]
	for i := range 4 {
		_, err := down.Dispatch(t.Context(), `App\Jobs\SendMail`, map[string]any{"n": i})
		require.NoError(t, err)
	}
	php := &downPHP{ran: map[int64]int{}}
	counter := &siteRuns{runs: map[string]int{}}
	reg := counter.registry()
	run := func(maxJobs, siteMaxJobs int) SitesSummary {
		return runSitesToEnd(t, SitesConfig{
			Discover: func(context.Context) ([]Site, error) {
				var out []Site
				for _, p := range prefixes {
					out = append(out, Site{Name: p, Config: Config{DSN: dsn, TablePrefix: p, MaxJobs: siteMaxJobs, RescueSchedule: "off", Logger: testLogger()}})
				}
				return out, nil
			},
			Registry: func(s Site) (*Registry, error) {
				if s.Name == "wp_3_" {
					return reg.WithFallback(php), nil
				}
				return reg, nil
			},
			StopWhenEmpty: maxJobs == 0, MaxJobs: maxJobs, LookInterval: 10 * time.Millisecond,
		})
	}
	phpPending := func() int {
		var n int
		require.NoError(t, down.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+down.store.Tables()["jobs"]+"` WHERE handler = ? AND status = 'pending' AND attempts = 0", `App\Jobs\SendMail`))
		return n
	}
	requireNamed := func(sum SitesSummary) {
		t.Helper()
		require.Equal(t, []string{"wp_3_"}, sum.NotServed())
		for _, s := range sum.Sites {
			if s.Name == "wp_3_" {
				require.Contains(t, s.Error, "failed to start 2 times in a row: bootstrap exited")
			}
		}
	}

	// flush: every Go job once (the down site's too), its PHP jobs kept.
	sum := run(0, 0)
	require.Equal(t, "empty", sum.Stopped)
	requireNamed(sum)
	for _, p := range prefixes {
		require.Equal(t, 3, countStatus(t, clients[p], "completed"), p)
	}
	total, twice := counter.count()
	require.Empty(t, twice)
	require.Equal(t, 9, total)
	require.Equal(t, 4, phpPending(), "the PHP jobs wait, attempts unspent")

	// work --once: one job a site, none on the down one.
	for _, p := range prefixes[:2] {
		dispatchToSite(t, clients[p], p, 2)
	}
	sum = run(0, 1)
	require.Equal(t, "empty", sum.Stopped)
	requireNamed(sum)
	for _, p := range prefixes[:2] {
		require.Equal(t, 4, countStatus(t, clients[p], "completed"), p)
	}

	// A MaxJobs budget over the sites: taken by the sites that can run.
	sum = run(2, 0)
	require.Equal(t, "max-jobs", sum.Stopped)
	for _, p := range prefixes[:2] {
		require.Equal(t, 5, countStatus(t, clients[p], "completed"), p)
	}
	require.Equal(t, 4, phpPending())
	ran, _ := php.runs()
	require.Zero(t, ran, "no PHP job ran while PHP was down")

	// PHP runs again: the next drain runs them.
	php.up.Store(true)
	sum = run(0, 0)
	require.Equal(t, "empty", sum.Stopped)
	require.Empty(t, sum.NotServed())
	ran, twicePHP := php.runs()
	require.Empty(t, twicePHP)
	require.Equal(t, 4, ran)
	require.Zero(t, phpPending())
	require.Equal(t, 3+4, countStatus(t, down, "completed"))
	total, twice = counter.count()
	require.Empty(t, twice)
	require.Equal(t, 9+2+2, total)
}
