//go:build measure

package queuety

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestMeasureSitesIdleLoops prints the statements an idle many-sites
// daemon sends a second, by kind, with every per-site loop on at the
// intervals `work --sites --workflows --retention-days 7
// --log-retention-days 7` gives them: the stale sweep (@every 1m),
// retention (@hourly), the deadline check (60 s), the wait sweep (30 s),
// the signal poll (10 s), the scheduler (60 s), the registration heartbeat
// (20 s), the webhooks (10 s), and the batched look (50 ms). It asserts
// nothing.
//
//	go test -tags measure -count=1 -run TestMeasureSitesIdleLoops -v ./queuety/
//
// QUEUETY_MEASURE_SITES (default 50, ten a database),
// QUEUETY_MEASURE_WINDOW (default 2m) and QUEUETY_MEASURE_RETENTION_DAYS
// (default 7; 0: retention off) change the run.
func TestMeasureSitesIdleLoops(t *testing.T) {
	n, window, days := 50, 2*time.Minute, 7
	if v := os.Getenv("QUEUETY_MEASURE_SITES"); v != "" {
		_, err := fmt.Sscan(v, &n)
		require.NoError(t, err)
	}
	if v := os.Getenv("QUEUETY_MEASURE_RETENTION_DAYS"); v != "" {
		_, err := fmt.Sscan(v, &days)
		require.NoError(t, err)
	}
	if v := os.Getenv("QUEUETY_MEASURE_WINDOW"); v != "" {
		var err error
		window, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	const perDatabase = 10
	var sites []Site
	var mu sync.Mutex
	var wg sync.WaitGroup
	for d := 0; d*perDatabase < n; d++ {
		dsn := testdb.New(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := 0; p < perDatabase && d*perDatabase+p < n; p++ {
				prefix := fmt.Sprintf("wp_%d_", p+2)
				c, err := Open(context.Background(), Config{DSN: dsn, TablePrefix: prefix, Logger: testLogger()})
				require.NoError(t, err)
				_, err = c.Migrate(context.Background())
				require.NoError(t, err)
				require.NoError(t, c.Close())
				mu.Lock()
				sites = append(sites, Site{Name: fmt.Sprintf("db%d/%s", d, prefix), Config: Config{DSN: dsn, TablePrefix: prefix,
					Workflows: true, RetentionDays: days, LogRetentionDays: days,
					SignalPollInterval: DefaultSitesSignalPoll, WaitSweepInterval: DefaultSitesWaitSweep,
					RegistrationHeartbeat: DefaultSitesRegistration, ShutdownGrace: time.Second, Logger: testLogger()}})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	counter := &statementCounter{}
	s, err := NewSites(SitesConfig{
		Discover: func(context.Context) ([]Site, error) { return sites, nil },
		Registry: func(Site) (*Registry, error) { return NewRegistry(), nil },
		Logger:   testLogger(),
	})
	require.NoError(t, err)
	s.open = counter.open
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	<-s.Started()
	require.Empty(t, s.Unreachable())
	time.Sleep(10 * time.Second) // past every site's start

	counter.start()
	time.Sleep(window)
	batched, own := counter.stop()
	// The sites' own statements by what they do: their table names made
	// one.
	site := regexp.MustCompile("`wp_[0-9]+_queuety_")
	kinds := map[string]int{}
	for q, c := range own {
		kinds[site.ReplaceAllString(q, "`wp_N_queuety_")] += c
	}
	total := 0
	fmt.Printf("%d idle sites, %d databases, every loop on (retention days %d), %s:\n", n, (n+perDatabase-1)/perDatabase, days, window)
	for _, k := range slices.Sorted(maps.Keys(batched)) {
		fmt.Printf("  %7.2f/s  batched  %s\n", float64(batched[k])/window.Seconds(), k)
		total += batched[k]
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Printf("  %7.2f/s  own      %s\n", float64(kinds[k])/window.Seconds(), k)
		total += kinds[k]
	}
	fmt.Printf("  %7.2f/s  all\n", float64(total)/window.Seconds())
}
