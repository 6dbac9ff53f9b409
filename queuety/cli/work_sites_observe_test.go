package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
)

// dispatchOn dispatches n jobs of handler on one prefix of dsn.
func dispatchOn(t *testing.T, dsn, prefix, handler string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: prefix})
	require.NoError(t, err)
	defer c.Close()
	for range n {
		_, err := c.Dispatch(ctx, handler, nil)
		require.NoError(t, err)
	}
}

// siteWPConfig writes a single site's wp-config.php in dir, on the
// database of dsn with table prefix prefix.
func siteWPConfig(t *testing.T, dir, dsn, prefix string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "wp-config.php")
	src := fmt.Sprintf("<?php\ndefine('DB_NAME', '%s');\ndefine('DB_USER', '%s');\ndefine('DB_PASSWORD', '%s');\ndefine('DB_HOST', '%s');\n$table_prefix = '%s';\n",
		cfg.DBName, cfg.User, cfg.Passwd, cfg.Addr, prefix)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// TestSiteFlagReadCommands: --site points job list, job inspect,
// workflow list and status at one subsite of a 3-subsite network, by its
// name, its blog id or its URL, each reading that subsite's tables (job 1
// exists in all three); a single site of --sites is found by its
// directory; an unknown site, --site alone and --network alone are usage
// errors naming the flag.
func TestSiteFlagReadCommands(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/")
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
	}
	dispatchOn(t, dsn, "wp_", "site.one", 1)
	dispatchOn(t, dsn, "wp_2_", "site.two", 2)
	dispatchOn(t, dsn, "wp_3_", "site.three", 3)
	network := networkWPConfig(t, dsn)

	list := func(site string) []struct {
		ID      int64
		Handler string
	} {
		t.Helper()
		r := runOK(t, "job", "list", "--network", network, "--site", site, "--json")
		var rows []struct {
			ID      int64
			Handler string
		}
		decodeJSON(t, r, &rows)
		return rows
	}
	handlersOf := func(rows []struct {
		ID      int64
		Handler string
	}) (out []string) {
		for _, r := range rows {
			out = append(out, r.Handler)
		}
		return out
	}
	require.Equal(t, []string{"site.two", "site.two"}, handlersOf(list("blog 2")))
	require.Equal(t, []string{"site.three", "site.three", "site.three"}, handlersOf(list("3")), "by blog id")
	require.Equal(t, []string{"site.two", "site.two"}, handlersOf(list("https://Example.test/a")), "by URL")
	require.Equal(t, []string{"site.one"}, handlersOf(list("example.test/")), "the main site by URL")

	r := runOK(t, "job", "inspect", "1", "--network", network, "--site", "blog 3", "--json")
	var job struct{ Handler string }
	decodeJSON(t, r, &job)
	require.Equal(t, "site.three", job.Handler, "job 1 of blog 3's table")

	r = runOK(t, "workflow", "list", "--network", network, "--site", "blog 2", "--json")
	require.JSONEq(t, "[]", r.stdout)

	r = runOK(t, "status", "--network", network, "--site", "blog 3", "--json")
	var stats []struct {
		Queue  string
		Counts map[string]int
	}
	decodeJSON(t, r, &stats)
	require.Len(t, stats, 1, r.String())
	require.Equal(t, 3, stats[0].Counts["pending"], "blog 3's own status")

	r = run(t, "job", "list", "--network", network, "--site", "blog 9")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, `--site "blog 9": no such site; known: "blog 1", "blog 2", "blog 3"`, r.String())
	r = run(t, on(dsn, "job", "list", "--site", "blog 2")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--site \"blog 2\": give --network FILE or --sites GLOB|FILE", r.String())
	r = run(t, "log", "--network", network)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "name the site to read with --site NAME", r.String())

	// Single sites by their directory (one with a space in it).
	root := t.TempDir()
	siteWPConfig(t, filepath.Join(root, "my shop"), dsn, "wp_2_")
	siteWPConfig(t, filepath.Join(root, "blog"), dsn, "wp_3_")
	glob := filepath.Join(root, "*", "wp-config.php")
	r = runOK(t, "job", "list", "--sites", glob, "--site", filepath.Join(root, "my shop")+"/", "--json")
	var rows []struct{ Handler string }
	decodeJSON(t, r, &rows)
	require.Len(t, rows, 2, r.String())
	require.Equal(t, "site.two", rows[0].Handler)
	r = run(t, "job", "list", "--sites", glob, "--site", "shop")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "no such site; known: ", r.String())
	require.Contains(t, r.stderr, filepath.Join(root, "blog", "wp-config.php"), r.String())
}

// TestSiteFlagsFromEnvironment: status reads --network from
// QUEUETY_NETWORK (a line a subsite), as work does; job list does not (it
// would need --site), so a unit's environment leaves it reading the one
// site its --dsn and --prefix name.
func TestSiteFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/")
	for _, p := range []string{"wp_", "wp_2_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
	}
	dispatchOn(t, dsn, "wp_2_", "site.two", 2)
	env := append(os.Environ(), "QUEUETY_NETWORK="+networkWPConfig(t, dsn), "QUEUETY_SITES=")

	cmd := exec.Command(bin, "status", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err, string(out))
	var lines []struct {
		Site   string
		Counts map[string]int
	}
	require.NoError(t, json.Unmarshal(out, &lines), string(out))
	require.Len(t, lines, 2, string(out))
	require.Equal(t, "blog 2", lines[1].Site)
	require.Equal(t, 2, lines[1].Counts["pending"])

	cmd = exec.Command(bin, "--dsn", dsn, "--prefix", "wp_2_", "job", "list", "--json")
	cmd.Env = env
	out, err = cmd.Output()
	require.NoError(t, err, string(out))
	var rows []struct{ Handler string }
	require.NoError(t, json.Unmarshal(out, &rows), string(out))
	require.Len(t, rows, 2, string(out))
	require.Equal(t, "site.two", rows[0].Handler)
}

// TestWorkSitesMetrics: work --sites with --metrics-listen serves /metrics
// with a site label for each of three single sites (one named with quotes,
// braces and a newline in its directory), at most --metrics-max-sites of
// them, the last by name summed under site="other"; jobs run are counted by
// site, open jobs read by site; the exposition passes promtool. /sites
// carries each site's open jobs. A site no longer listed has its series
// removed, and the folded one gets its own label back.
func TestWorkSitesMetrics(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	root := t.TempDir()
	hostile := "c\"{x=\"y\"}\nz"
	dirs := map[string]string{"wp_": filepath.Join(root, "a"), "wp_2_": filepath.Join(root, "b"), "wp_3_": filepath.Join(root, hostile)}
	name := func(p string) string { return filepath.Join(dirs[p], "wp-config.php") }
	for p, dir := range dirs {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
		siteWPConfig(t, dir, dsn, p)
	}
	dispatchNoops(t, dsn, "wp_", 2)
	dispatchNoops(t, dsn, "wp_2_", 3)
	dispatchNoops(t, dsn, "wp_3_", 4)
	dispatchOn(t, dsn, "wp_2_", "nobody.serves.this", 5) // stays pending
	db := openDB(t, dsn)
	completed := func(p string) int {
		return count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs` WHERE status = 'completed'")
	}

	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--sites", filepath.Join(root, "*", "wp-config.php"), "--poll-interval", "20ms",
		"--sites-reread", "1h", "--metrics-listen", "127.0.0.1:0", "--metrics-max-sites", "2")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc := startCmd(t, cmd)
	proc.stderr = &stderr
	wait := func(what string, cond func() bool) { t.Helper(); proc.waitWork(t, what, cond) }
	wait("every site's jobs", func() bool { return completed("wp_") == 2 && completed("wp_2_") == 3 && completed("wp_3_") == 4 })
	m := regexp.MustCompile(`/metrics, /healthz, /readyz and /sites on http://(\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	addr := m[1]

	// Open jobs are read at most every 2 s: wait for a read after the runs.
	var fams families
	var text string
	wait("a scrape with every site's open jobs read after the runs", func() bool {
		_, text = scrape(t, addr, "/metrics", "")
		fams = parseFamilies(t, text)
		v, ok := fams.value("queuety_jobs", map[string]string{"site": name("wp_2_"), "queue": "default", "status": "pending"})
		done, _ := fams.value("queuety_jobs_processed_total", map[string]string{"site": "other", "queue": "default", "handler": "queuety.noop", "outcome": "completed"})
		return ok && v == 5 && done == 4
	})
	require.Equal(t, []string{name("wp_"), name("wp_2_"), "other"}, fams.siteLabels("queuety_database_up"), "a/ and b/ first by name; the third folded")
	for p, n := range map[string]float64{"wp_": 2, "wp_2_": 3} {
		v, ok := fams.value("queuety_jobs_processed_total", map[string]string{"site": name(p), "queue": "default", "handler": "queuety.noop", "outcome": "completed"})
		require.True(t, ok, text)
		require.Equal(t, n, v, p)
	}
	v, _ := fams.value("queuety_sites", map[string]string{"state": "running"})
	require.Equal(t, 3.0, v)
	v, _ = fams.value("queuety_sites_folded", map[string]string{})
	require.Equal(t, 1.0, v)
	require.NotEmpty(t, fams.labelValues("queuety_sites_look_duration_seconds", "server"), "the server's look")
	promtoolCheck(t, text)

	_, body := scrape(t, addr, "/sites", "")
	var sites []struct {
		Name  string
		State string
		Slots int
		Jobs  map[string]int
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sites), body)
	require.Len(t, sites, 3, body)
	for _, s := range sites {
		require.Equal(t, "running", s.State, s.Name)
		require.Positive(t, s.Slots, s.Name)
		want := map[string]int{"pending": 0, "processing": 0, "failed": 0, "buried": 0}
		if s.Name == name("wp_2_") {
			want["pending"] = 5
		}
		require.Equal(t, want, s.Jobs, s.Name)
	}

	// Site a is no longer listed: its series go, the hostile one gets
	// its own label.
	require.NoError(t, os.Remove(name("wp_")))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	wait("site a's series gone", func() bool {
		_, text = scrape(t, addr, "/metrics", "")
		fams = parseFamilies(t, text)
		labels := fams.siteLabels("queuety_database_up")
		return len(labels) == 2 && labels[0] == name("wp_2_")
	})
	require.Equal(t, []string{name("wp_2_"), name("wp_3_")}, fams.siteLabels("queuety_database_up"))
	for fam := range fams {
		for _, l := range fams.siteLabels(fam) {
			require.NotEqual(t, name("wp_"), l, fam)
			require.NotEqual(t, "other", l, fam)
		}
	}
	dispatchNoops(t, dsn, "wp_3_", 1)
	wait("the hostile site's run counted under its own label", func() bool {
		_, text = scrape(t, addr, "/metrics", "")
		fams = parseFamilies(t, text)
		v, _ := fams.value("queuety_jobs_processed_total", map[string]string{"site": name("wp_3_"), "queue": "default", "handler": "queuety.noop", "outcome": "completed"})
		return v == 1
	})
	require.True(t, strings.Contains(text, `site="`+strings.ReplaceAll(strings.ReplaceAll(name("wp_3_"), `"`, `\"`), "\n", `\n`)+`"`), "escaped in the text:\n%s", text)
	promtoolCheck(t, text)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-proc.exited:
		require.NoError(t, proc.waitErr, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("work still running 20s after SIGTERM\nstderr:\n%s", stderr.String())
	}
}

// TestWorkSitesReadyzReasons: a site whose PHP pool cannot start (tried by
// its first PHP job) has its PHP jobs not served; /readyz answers 503
// naming it with the reason, a line a site, and so does the dashboard
// listener's (--http), in a word; its Go side is served (/metrics reads
// its database up) and its PHP job waits, unspent.
func TestWorkSitesReadyzReasons(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/")
	for _, p := range []string{"wp_", "wp_2_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
	}
	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--network", networkWPConfig(t, dsn), "--poll-interval", "20ms",
		"--php", "sh -c 'echo no WordPress here >&2; exit 3'", "--metrics-listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "QUEUETY_WORKER_TOKEN=", "QUEUETY_OPERATOR_TOKEN=ot-0123456789abcdef")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	startCmd(t, cmd)
	var addr, httpAddr string
	waitFor(t, 60*time.Second, "the listeners", func() bool {
		m := regexp.MustCompile(`/sites on http://(\S+)`).FindStringSubmatch(stderr.String())
		h := regexp.MustCompile(`the dashboard of the sites listening on http://(\S+)`).FindStringSubmatch(stderr.String())
		if m != nil && h != nil {
			addr, httpAddr = m[1], h[1]
		}
		return m != nil && h != nil
	})
	var code int
	var body string
	waitFor(t, 60*time.Second, "/readyz ready (no PHP job yet, no pool)", func() bool {
		code, body = scrape(t, addr, "/readyz", "")
		return code == http.StatusOK
	})
	code, body = scrape(t, httpAddr, "/readyz", "")
	require.Equal(t, http.StatusOK, code, body)
	for _, p := range []string{"wp_", "wp_2_"} {
		c, err := queuety.Open(context.Background(), queuety.Config{DSN: dsn, TablePrefix: p})
		require.NoError(t, err)
		_, err = c.Dispatch(context.Background(), "SitePHPJob", nil)
		require.NoError(t, err)
		require.NoError(t, c.Close())
	}
	waitFor(t, 60*time.Second, "/readyz naming both subsites", func() bool {
		code, body = scrape(t, addr, "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "blog 1: php pool failed: ") && strings.Contains(body, "blog 2: php pool failed: ")
	})
	lines := strings.Split(strings.TrimSpace(body), "\n")
	require.Equal(t, "not ready: not served: blog 1, blog 2", lines[0], body)
	require.Len(t, lines, 3, body)
	require.Contains(t, lines[2], "blog 2: php pool failed: ", body)
	require.Contains(t, lines[2], "failed to start", body)
	code, body = scrape(t, httpAddr, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code, "the dashboard listener's /readyz counts a failed PHP pool too")
	require.Equal(t, "not ready\n", body)
	_, text := scrape(t, addr, "/metrics", "")
	fams := parseFamilies(t, text)
	for _, site := range []string{"blog 1", "blog 2"} {
		v, ok := fams.value("queuety_database_up", map[string]string{"site": site})
		require.True(t, ok, text)
		require.Equal(t, 1.0, v, site)
	}
	v, _ := fams.value("queuety_sites", map[string]string{"state": "running"})
	require.Equal(t, 2.0, v)
	db := openDB(t, dsn)
	for _, p := range []string{"wp_", "wp_2_"} {
		require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs` WHERE status = 'pending' AND attempts = 0"), p)
	}
}

// TestWorkSitesMetricsFlagErrors: --metrics-max-sites below 1 is refused,
// naming the flag.
func TestWorkSitesMetricsFlagErrors(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	r := run(t, on(dsn, "work", "--sites", "x.php", "--metrics-listen", "127.0.0.1:0", "--metrics-max-sites", "0")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--metrics-max-sites 0: must be at least 1", r.String())
}

// families is a parsed exposition, by metric name.
type families map[string]*dto.MetricFamily

func parseFamilies(t *testing.T, text string) families {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, text)
	return fams
}

// value is the value of name's series whose labels are exactly want (a
// histogram's or summary's count).
func (f families) value(name string, want map[string]string) (float64, bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		if !maps.Equal(got, want) {
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

// labelValues are the values of label in name's series, sorted.
func (f families) labelValues(name, label string) []string {
	var out []string
	if fam := f[name]; fam != nil {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func (f families) siteLabels(name string) []string { return f.labelValues(name, "site") }

// promtoolCheck runs `promtool check metrics` on an exposition
// (scripts/ensure-promtool.sh installs promtool).
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed: run scripts/ensure-promtool.sh (apt-get install prometheus)")
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
}
