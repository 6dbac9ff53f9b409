package queuety

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// What an idle site may keep: goroutines and live heap, shared pools and
// loops included. Measured with 20 sites on two databases at the default
// settings: 8.0 goroutines (a claim lane, the paused-queues refresher, the
// completer, the job heartbeat, the session leases' renewal, and the stale
// sweep's and the scheduler's loops, which Sites kicks) and 36 KiB a site.
// Before the per-site costs were cut, four more goroutines (the webhook
// senders) and 560 KiB (a 1,024-completion batch and every named query
// rendered, a worker each).
const (
	idleSiteGoroutines = 10
	idleSiteHeap       = 128 << 10
)

// TestSitesIdleFootprint: an idle site costs the daemon a few goroutines
// and tens of KiB, so a daemon for hundreds of sites stays small.
// Counted, not timed. Not parallel: the heap is the process's, and no
// other test's allocations may land in the measure.
func TestSitesIdleFootprint(t *testing.T) {
	const n = 20
	dsns := []string{testdb.New(t), testdb.New(t)}
	clients := map[string]*Client{}
	var sites []Site
	for i := range n {
		dsn, prefix := dsns[i%2], fmt.Sprintf("wp_%d_", i/2+1)
		name := fmt.Sprintf("db%d/%s", i%2, prefix)
		clients[name] = siteClient(t, dsn, prefix)
		sites = append(sites, Site{Name: name, Config: Config{DSN: dsn, TablePrefix: prefix, ShutdownGrace: time.Second, Logger: testLogger()}})
	}
	runs := &siteRuns{runs: map[string]int{}}
	reg := runs.registry()
	s, err := NewSites(SitesConfig{
		Discover: func(context.Context) ([]Site, error) { return sites, nil },
		Registry: func(Site) (*Registry, error) { return reg, nil },
		Logger:   testLogger(),
	})
	require.NoError(t, err)

	before := liveHeap()
	// Every goroutine Run starts, and the ones those start, carry the
	// label: they are the daemon's, whatever else the process runs.
	label := pprof.Labels("footprint", t.Name())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	pprof.Do(ctx, label, func(ctx context.Context) {
		go func() { done <- s.Run(ctx) }()
	})
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	<-s.Started()
	require.Empty(t, s.Unreachable())

	// Waited for, not slept on: a site's first rounds (its schedules'
	// first tick) end on their own; what stays is the idle cost.
	var goroutines int
	var heap uint64
	waitFor(t, 30*time.Second, fmt.Sprintf("at most %d goroutines a site", idleSiteGoroutines), func() bool {
		goroutines = labelledGoroutines(t, "footprint", t.Name())
		return goroutines <= idleSiteGoroutines*n
	})
	waitFor(t, 30*time.Second, fmt.Sprintf("at most %d KiB live a site", idleSiteHeap>>10), func() bool {
		heap = liveHeap() - min(before, liveHeap())
		return heap <= idleSiteHeap*n
	})
	t.Logf("%d idle sites: %d goroutines (%.1f a site), %d KiB live (%d a site)", n, goroutines, float64(goroutines)/n, heap>>10, heap>>10/n)

	// They are served: a job dispatched on each runs.
	for name, c := range clients {
		dispatchToSite(t, c, name, 1)
	}
	waitFor(t, time.Minute, "every site's job", func() bool { total, _ := runs.count(); return total == n })
	_, twice := runs.count()
	require.Empty(t, twice)
}

// liveHeap is the heap a collection run now finds live.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// labelledGoroutines counts the goroutines carrying label key=value.
func labelledGoroutines(t *testing.T, key, value string) int {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	// debug=1 groups goroutines by stack and labels: "N @ pcs…" then
	// "# labels: {…}" for a labelled group.
	group := regexp.MustCompile(`(?m)^(\d+) @[^\n]*\n# labels: \{([^}]*)\}`)
	want := strconv.Quote(key) + ":" + strconv.Quote(value)
	total := 0
	for _, m := range group.FindAllStringSubmatch(buf.String(), -1) {
		if bytes.Contains([]byte(m[2]), []byte(want)) {
			k, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			total += k
		}
	}
	return total
}
