package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// fakeSites is a SitesSource whose snapshot a test sets.
type fakeSites struct {
	mu    sync.Mutex
	snap  SitesSnapshot
	reads int
}

func (f *fakeSites) SitesSnapshot(context.Context) SitesSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.snap
}

func (f *fakeSites) set(sites ...SiteSnapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Sites = sites
}

func running(name string, jobs ...JobCount) SiteSnapshot {
	return SiteSnapshot{Name: name, State: SiteRunning, Busy: 1, Slots: 4, Jobs: jobs}
}

// testClock is a clock a test moves past the snapshot cache.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) pass(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func scrapeSites(t *testing.T, s *Sites) string {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, w.Code)
	b, err := io.ReadAll(w.Body)
	require.NoError(t, err)
	return string(b)
}

// families parses an exposition as Prometheus does.
func families(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, text)
	return fams
}

// value is the value of the series of family name whose labels are
// exactly want (a gauge's, a counter's or an untyped's).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

// siteLabels are the site label values of family name.
func siteLabels(fams map[string]*dto.MetricFamily, name string) []string {
	var out []string
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "site" && !slices.Contains(out, l.GetValue()) {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Past MaxSites, the sites last by natural order (and a site named
// "other") are summed under site="other": their jobs, slots and counters;
// nothing is lost in the folding.
func TestSitesLabelsCapped(t *testing.T) {
	t.Parallel()
	src := &fakeSites{}
	src.set(
		running("blog 10", JobCount{"default", "pending", 5}),
		running("blog 2", JobCount{"default", "pending", 2}),
		running("blog 1", JobCount{"default", "pending", 1}, JobCount{"mail", "buried", 1}),
		running("other", JobCount{"default", "pending", 7}, JobCount{"default", "failed", 3}),
	)
	s := NewSites(SitesConfig{Source: src, MaxSites: 2})
	scrapeSites(t, s) // the labels are handed out at the first scrape
	for _, name := range []string{"blog 1", "blog 2", "blog 10", "other"} {
		s.Counters(name).ObserveJob("default", "h", "completed", time.Millisecond)
	}
	s.Counters("blog 1").ObserveJob("default", "h", "completed", time.Millisecond)
	fams := families(t, scrapeSites(t, s))

	require.Equal(t, []string{"blog 1", "blog 2", "other"}, siteLabels(fams, "queuety_jobs"), "blog 2 before blog 10")
	require.Equal(t, []string{"blog 1", "blog 2", "other"}, siteLabels(fams, "queuety_jobs_processed_total"))
	pending := func(site string) float64 {
		v, ok := value(t, fams, "queuety_jobs", map[string]string{"site": site, "queue": "default", "status": "pending"})
		require.True(t, ok, site)
		return v
	}
	require.Equal(t, 1.0, pending("blog 1"))
	require.Equal(t, 2.0, pending("blog 2"))
	require.Equal(t, 12.0, pending("other"), "blog 10's and other's")
	v, _ := value(t, fams, "queuety_jobs", map[string]string{"site": "other", "queue": "default", "status": "failed"})
	require.Equal(t, 3.0, v)
	v, _ = value(t, fams, "queuety_jobs", map[string]string{"site": "blog 1", "queue": "mail", "status": "buried"})
	require.Equal(t, 1.0, v)
	v, _ = value(t, fams, "queuety_jobs", map[string]string{"site": "blog 1", "queue": "mail", "status": "pending"})
	require.Equal(t, 0.0, v, "every status of a queue, at 0 too")
	done := func(site string) float64 {
		v, ok := value(t, fams, "queuety_jobs_processed_total", map[string]string{"site": site, "queue": "default", "handler": "h", "outcome": "completed"})
		require.True(t, ok, site)
		return v
	}
	require.Equal(t, 2.0, done("blog 1"))
	require.Equal(t, 1.0, done("blog 2"))
	require.Equal(t, 2.0, done("other"))
	v, _ = value(t, fams, "queuety_worker_slots", map[string]string{"site": "other", "state": "idle"})
	require.Equal(t, 6.0, v, "two sites of 3 idle slots")
	v, _ = value(t, fams, "queuety_sites_folded", map[string]string{})
	require.Equal(t, 2.0, v)
	v, _ = value(t, fams, "queuety_sites", map[string]string{"state": "running"})
	require.Equal(t, 4.0, v)
	v, ok := value(t, fams, "queuety_sites", map[string]string{"state": "unreachable"})
	require.True(t, ok)
	require.Equal(t, 0.0, v, "every state, at 0 too")
	v, _ = value(t, fams, "queuety_build_info", map[string]string{"version": "unknown", "go_version": "unknown", "commit": "unknown"})
	require.Equal(t, 1.0, v, "once, without a site")
}

// A site that is no longer known has its series removed at the next
// scrape; one pushed past the cap by a new site earlier by name moves into
// "other", its own series gone; "other" goes once nothing is folded.
func TestSitesSeriesRemoved(t *testing.T) {
	t.Parallel()
	clk := &testClock{now: time.Unix(1000, 0)}
	src := &fakeSites{}
	src.set(running("b", JobCount{"default", "pending", 1}), running("c", JobCount{"default", "pending", 1}))
	s := NewSites(SitesConfig{Source: src, MaxSites: 2, Now: clk.Now})
	scrapeSites(t, s)
	s.Counters("b").ObserveJob("default", "h", "completed", time.Millisecond)
	s.Counters("c").ObserveJob("default", "h", "completed", time.Millisecond)
	fams := families(t, scrapeSites(t, s))
	require.Equal(t, []string{"b", "c"}, siteLabels(fams, "queuety_jobs_processed_total"))

	// a appears: c is pushed into other.
	src.set(running("a"), running("b", JobCount{"default", "pending", 1}), running("c", JobCount{"default", "pending", 1}))
	clk.pass(DefaultCacheFor)
	fams = families(t, scrapeSites(t, s))
	require.Equal(t, []string{"a", "b", "other"}, siteLabels(fams, "queuety_stale_rescued_total"))
	require.Equal(t, []string{"b"}, siteLabels(fams, "queuety_jobs_processed_total"), "c's own counters went with its label")
	require.Equal(t, []string{"a", "b", "other"}, siteLabels(fams, "queuety_database_up"))
	s.Counters("c").ObserveJob("default", "h", "completed", time.Millisecond)
	fams = families(t, scrapeSites(t, s))
	require.Equal(t, []string{"b", "other"}, siteLabels(fams, "queuety_jobs_processed_total"))

	// b and c stop being served: their series go, and other with c.
	src.set(running("a"))
	clk.pass(DefaultCacheFor)
	text := scrapeSites(t, s)
	fams = families(t, text)
	for _, name := range []string{"queuety_jobs_processed_total", "queuety_jobs", "queuety_database_up", "queuety_stale_rescued_total", "queuety_worker_slots"} {
		for _, l := range siteLabels(fams, name) {
			require.Equal(t, "a", l, "%s: only a's series are left\n%s", name, text)
		}
	}
	for name := range fams {
		require.NotContains(t, siteLabels(fams, name), OtherSite, name)
	}
}

// Scrapes within CacheFor share one read of the sites.
func TestSitesSnapshotCached(t *testing.T) {
	t.Parallel()
	clk := &testClock{now: time.Unix(1000, 0)}
	src := &fakeSites{}
	src.set(running("a"))
	s := NewSites(SitesConfig{Source: src, Now: clk.Now})
	for range 3 {
		scrapeSites(t, s)
	}
	require.Equal(t, 1, src.reads)
	clk.pass(DefaultCacheFor)
	scrapeSites(t, s)
	require.Equal(t, 2, src.reads)
}

// A site whose database does not answer, or that could not be started,
// reads database_up 0 and has no job series; the other sites' stay; the
// servers' look counters are there.
func TestSitesDownAndServers(t *testing.T) {
	t.Parallel()
	src := &fakeSites{}
	src.set(running("a", JobCount{"default", "pending", 1}),
		SiteSnapshot{Name: "b", State: SiteRunning, JobsErr: errors.New("table gone")},
		SiteSnapshot{Name: "c", State: "failed"},
		SiteSnapshot{Name: "d", State: "unreachable"})
	src.snap.Servers = []ServerSnapshot{{Server: "root@127.0.0.1:3306", Sites: 2, Looks: 40, LookErrors: 3, LookSeconds: 0.2}}
	s := NewSites(SitesConfig{Source: src})
	fams := families(t, scrapeSites(t, s))
	for site, want := range map[string]float64{"a": 1, "b": 0, "c": 0, "d": 0} {
		v, ok := value(t, fams, "queuety_database_up", map[string]string{"site": site})
		require.True(t, ok, site)
		require.Equal(t, want, v, site)
	}
	require.Equal(t, []string{"a"}, siteLabels(fams, "queuety_jobs"))
	for st, want := range map[string]float64{"running": 2, "failed": 1, "unreachable": 1, "starting": 0} {
		v, _ := value(t, fams, "queuety_sites", map[string]string{"state": st})
		require.Equal(t, want, v, st)
	}
	v, _ := value(t, fams, "queuety_sites_look_errors_total", map[string]string{"server": "root@127.0.0.1:3306"})
	require.Equal(t, 3.0, v)
	v, _ = value(t, fams, "queuety_sites_look_duration_seconds", map[string]string{"server": "root@127.0.0.1:3306"})
	require.Equal(t, 40.0, v)
	require.InDelta(t, 0.2, fams["queuety_sites_look_duration_seconds"].Metric[0].Summary.GetSampleSum(), 1e-9)
}

// Site names are data: quotes, backslashes, newlines, braces and bytes
// that are not UTF-8 are escaped (or replaced), never break the
// exposition, which Prometheus's parser and promtool accept.
func TestSitesLabelEscaping(t *testing.T) {
	t.Parallel()
	hostile := "a\"b\\c\nd{e=\"f\"} g"
	latin1 := "caf\xe9 /var/www"
	src := &fakeSites{}
	src.set(running(hostile, JobCount{"q\"}", "pending", 2}), running(latin1, JobCount{"default", "pending", 3}))
	s := NewSites(SitesConfig{Source: src})
	scrapeSites(t, s)
	s.Counters(hostile).ObserveJob("default", "h", "completed", time.Millisecond)
	s.Counters(latin1).ObserveJob("default", "h", "completed", time.Millisecond)
	text := scrapeSites(t, s)
	fams := families(t, text)
	v, ok := value(t, fams, "queuety_jobs", map[string]string{"site": hostile, "queue": "q\"}", "status": "pending"})
	require.True(t, ok, text)
	require.Equal(t, 2.0, v)
	v, ok = value(t, fams, "queuety_jobs", map[string]string{"site": "caf\uFFFD /var/www", "queue": "default", "status": "pending"})
	require.True(t, ok, text)
	require.Equal(t, 3.0, v)
	require.Equal(t, []string{hostile, "caf\uFFFD /var/www"}, siteLabels(fams, "queuety_jobs_processed_total"))
	promtoolCheckMetrics(t, text)
}

// promtoolCheckMetrics runs `promtool check metrics` on an exposition
// (scripts/ensure-promtool.sh installs it).
func promtoolCheckMetrics(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed: run scripts/ensure-promtool.sh (apt-get install prometheus)")
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
}

// Natural order: digits compared as numbers, so a network's blogs keep
// their labels in blog id order.
func TestNaturalCompare(t *testing.T) {
	t.Parallel()
	names := []string{"blog 10", "blog 2", "blog 1", "blog 100", "blog 02", "a", "blog", "/var/www/b9/wp-config.php", "/var/www/b10/wp-config.php"}
	slices.SortFunc(names, naturalCompare)
	require.Equal(t, []string{"/var/www/b9/wp-config.php", "/var/www/b10/wp-config.php", "a", "blog", "blog 1", "blog 02", "blog 2", "blog 10", "blog 100"}, names)
}

// Counters of a site not yet seen by a scrape are its own from the
// start; many observers at once hand out each label once.
func TestSitesCountersConcurrent(t *testing.T) {
	t.Parallel()
	src := &fakeSites{}
	s := NewSites(SitesConfig{Source: src, MaxSites: 5})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s.Counters(fmt.Sprint("site ", i)).ObserveJob("default", "h", "completed", time.Millisecond)
			}
		}()
	}
	wg.Wait()
	src.set(func() (out []SiteSnapshot) {
		for i := range 20 {
			out = append(out, running(fmt.Sprint("site ", i)))
		}
		return out
	}()...)
	fams := families(t, scrapeSites(t, s))
	require.Equal(t, []string{"other", "site 0", "site 1", "site 2", "site 3", "site 4"}, siteLabels(fams, "queuety_database_up"))
	var total float64
	for _, l := range siteLabels(fams, "queuety_jobs_processed_total") {
		v, _ := value(t, fams, "queuety_jobs_processed_total", map[string]string{"site": l, "queue": "default", "handler": "h", "outcome": "completed"})
		total += v
	}
	// Sites that moved into other while counting took their counts with
	// their own label; those counted in other from the start are there.
	require.LessOrEqual(t, total, 1000.0)
	v, _ := value(t, fams, "queuety_jobs_processed_total", map[string]string{"site": "site 0", "queue": "default", "handler": "h", "outcome": "completed"})
	require.Equal(t, 50.0, v, "a site first by name never lost its label")
}
