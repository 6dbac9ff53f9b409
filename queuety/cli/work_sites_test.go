package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/workflow"
)

// networkWPConfig writes a multisite wp-config.php for the database of dsn.
func networkWPConfig(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "wp-config.php")
	src := fmt.Sprintf("<?php\ndefine('DB_NAME', '%s');\ndefine('DB_USER', '%s');\ndefine('DB_PASSWORD', '%s');\ndefine('DB_HOST', '%s');\n"+
		"$table_prefix = 'wp_';\ndefine('MULTISITE', true);\ndefine('SUBDOMAIN_INSTALL', false);\n", cfg.DBName, cfg.User, cfg.Passwd, cfg.Addr)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

func dispatchNoops(t *testing.T, dsn, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: prefix})
	require.NoError(t, err)
	defer c.Close()
	for range n {
		_, err := c.Dispatch(ctx, builtins.Noop, nil)
		require.NoError(t, err)
	}
}

// TestWorkNetwork: `work --network wp-config.php` serves the main site and
// every subsite with Queuety tables (made by `queuety --prefix wp_N_
// migrate`), each job once; a subsite created during the run is served
// after SIGHUP; SIGTERM stops every site's worker, exit 0.
func TestWorkNetwork(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/")
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
		dispatchNoops(t, dsn, p, 5)
	}
	db := openDB(t, dsn)
	completed := func(prefix string) int {
		return count(t, db, "SELECT COUNT(*) FROM `"+prefix+"queuety_jobs` WHERE status = 'completed' AND attempts = 1")
	}

	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--network", networkWPConfig(t, dsn), "--poll-interval", "20ms", "--sites-reread", "1h", "--metrics-listen", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc := startCmd(t, cmd)
	exited := proc.exited
	proc.stderr = &stderr
	wait := func(what string, cond func() bool) { t.Helper(); proc.waitWork(t, what, cond) }
	wait("every site's jobs", func() bool { return completed("wp_") == 5 && completed("wp_2_") == 5 && completed("wp_3_") == 5 })

	addr := regexp.MustCompile(`/sites on http://(\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, addr, stderr.String())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr[1] + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	_, body = get("/sites")
	var sites []struct{ Name, URL, State string }
	require.NoError(t, json.Unmarshal([]byte(body), &sites))
	require.Equal(t, []struct{ Name, URL, State string }{
		{"blog 1", "example.test/", "running"}, {"blog 2", "example.test/a/", "running"}, {"blog 3", "example.test/b/", "running"},
	}, sites)

	// Blog 3's jobs table gone: /readyz names it, the others carry on.
	exec1(t, db, "RENAME TABLE wp_3_queuety_jobs TO wp_3_gone")
	wait("/readyz names blog 3", func() bool {
		code, body := get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "blog 3")
	})
	dispatchNoops(t, dsn, "wp_2_", 5)
	wait("blog 2 drains meanwhile", func() bool { return completed("wp_2_") == 10 })
	exec1(t, db, "RENAME TABLE wp_3_gone TO wp_3_queuety_jobs")
	wait("/readyz ready again", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })

	id := testdb.AddBlog(t, dsn, "wp_", "/new/")
	prefix := fmt.Sprintf("wp_%d_", id)
	runOK(t, on(dsn, "--prefix", prefix, "migrate")...)
	dispatchNoops(t, dsn, prefix, 5)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	wait("the new subsite's jobs", func() bool { return completed(prefix) == 5 })

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		var ee *exec.ExitError
		if errors.As(proc.waitErr, &ee) {
			t.Fatalf("work exited with %v after SIGTERM\nstderr:\n%s", ee, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("work still running 20s after SIGTERM\nstderr:\n%s", stderr.String())
	}
	require.Contains(t, stderr.String(), "site=\"blog 4\"")
	for p, n := range map[string]int{"wp_": 5, "wp_2_": 10, "wp_3_": 5, prefix: 5} {
		require.Equal(t, n, count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs`"), p)
		require.Equal(t, n, completed(p), "%s: every job completed on its first attempt", p)
	}
}

func TestWorkSitesFlagErrors(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--network", "a.php", "--sites", "b"}, "--network and --sites"},
		// --http serves the dashboard of every site; the worker plane, one site's, is refused.
		{[]string{"--sites", "b", "--http", "127.0.0.1:0", "--operator-token", "ot-0123456789abcdef", "--worker-token", "wt-0123456789abcdef"},
			"--worker-token (QUEUETY_WORKER_TOKEN) with --network or --sites"},
		{[]string{"--network", "a.php", "--wp-config", "b.php"}, "the network's wp-config.php is given once"},
		{[]string{"--sites", "b", "--poll-interval", "200ms", "--idle-look-interval", "100ms"}, "--idle-look-interval 100ms: at least --poll-interval 200ms"},
	} {
		args := tc.args
		if args[0] == "--network" && len(args) > 2 && args[2] == "--wp-config" {
			r := run(t, "--wp-config", "b.php", "work", "--network", "a.php")
			require.Equal(t, cli.ExitUsage, r.code, r.String())
			require.Contains(t, r.stderr, tc.want, r.String())
			continue
		}
		r := run(t, on(dsn, append([]string{"work"}, args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
	}
}

// TestWorkNetworkPHPPoolPerSubsite: with --php, each subsite's PHP
// handlers run in a pool of its own, started with --url for that subsite
// (the fake wp-load.php here records the request WordPress would resolve
// the subsite from), each job once.
func TestWorkNetworkPHPPoolPerSubsite(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/")
	dir := t.TempDir()
	record := filepath.Join(dir, "ran.txt")
	wpLoad := filepath.Join(dir, "wp-load.php")
	require.NoError(t, os.WriteFile(wpLoad, []byte(`<?php
\Queuety\Bridge\Handlers::register('record', static function (array $p): void {
    file_put_contents(`+"'"+record+"'"+`, $_SERVER['HTTP_HOST'] . $_SERVER['REQUEST_URI'] . ' ' . $p['site'] . "\n", FILE_APPEND | LOCK_EX);
});
`), 0o644))
	ctx := context.Background()
	want := map[string]int{}
	for p, url := range map[string]string{"wp_": "example.test/", "wp_2_": "example.test/a/", "wp_3_": "example.test/b/"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
		c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: p})
		require.NoError(t, err)
		for range 4 {
			_, err := c.Dispatch(ctx, "record", map[string]any{"site": p})
			require.NoError(t, err)
		}
		require.NoError(t, c.Close())
		want[url+" "+p] = 4
	}
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)

	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--network", networkWPConfig(t, dsn), "--poll-interval", "20ms",
		"--php", "php "+worker+" --wp-load "+wpLoad)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc := startCmd(t, cmd)
	exited := proc.exited
	got := func() map[string]int {
		m := map[string]int{}
		b, _ := os.ReadFile(record)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				m[l]++
			}
		}
		return m
	}
	deadline := time.Now().Add(90 * time.Second)
	for total(got()) < 12 {
		if time.Now().After(deadline) {
			t.Fatalf("PHP jobs not run after 90s: %v\nstderr:\n%s", got(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-exited
	require.Equal(t, want, got(), "each subsite's jobs ran once, in the pool loaded for its URL")
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestStatusSites: status --network prints a line of job counts for each
// subsite; status --sites names a site whose database is gone, exit 1.
func TestStatusSites(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/")
	for _, p := range []string{"wp_", "wp_2_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
	}
	dispatchNoops(t, dsn, "wp_2_", 3)
	r := runOK(t, "status", "--network", networkWPConfig(t, dsn), "--json")
	var lines []struct {
		Site, URL string
		Counts    map[string]int
	}
	decodeJSON(t, r, &lines)
	require.Len(t, lines, 2, r.String())
	require.Equal(t, "blog 2", lines[1].Site)
	require.Equal(t, "example.test/a/", lines[1].URL)
	require.Equal(t, 3, lines[1].Counts["pending"])
	require.Zero(t, lines[0].Counts["pending"])

	list := filepath.Join(t.TempDir(), "sites.txt")
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.DBName += "_gone"
	require.NoError(t, os.WriteFile(list, []byte("# two sites\n"+dsn+" wp_2_\n"+cfg.FormatDSN()+" wp_\n"), 0o600))
	r = run(t, "status", "--sites", list)
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stdout, "unreachable", r.String())
	require.Contains(t, r.stderr, "1 of 2 sites unreachable", r.String())
}

// networkSubsites is how many subsites TestWorkNetworkDoneWhen serves, each
// with a PHP pool of its own: the 20 (a 2-core machine shared with
// other work, load 9-15, ran it in 10-27 s; lower it there if 20 PHP
// processes are too many for the machine).
const networkSubsites = 20

// TestWorkNetworkDoneWhen is the issue's "done when" run: one `work
// --network … --php …` runs a plugin-shaped job (a Queuety\Handler class)
// and a 3-step workflow of Queuety\Step classes on each of 20 subsites,
// every handler in the pool loaded for its subsite (the fake wp-load.php
// records the subsite URL WordPress would resolve) and each exactly once;
// a subsite created during the run is served by the re-read alone (no
// SIGHUP).
func TestWorkNetworkDoneWhen(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := testdb.New(t)
	paths := make([]string, networkSubsites-1)
	for i := range paths {
		paths[i] = fmt.Sprintf("/s%d/", i+2)
	}
	testdb.Multisite(t, dsn, "wp_", paths...)
	dir := t.TempDir()
	record := filepath.Join(dir, "ran.txt")
	wpLoad := filepath.Join(dir, "wp-load.php")
	require.NoError(t, os.WriteFile(wpLoad, []byte(`<?php
function site_ran(string $what, string $site): void {
    file_put_contents(`+"'"+record+"'"+`, $_SERVER['HTTP_HOST'] . $_SERVER['REQUEST_URI'] . ' ' . $what . ' ' . $site . "\n", FILE_APPEND | LOCK_EX);
}
final class SiteJob implements Queuety\Handler {
    public function handle(array $payload): void { site_ran('job', $payload['site']); }
    public function config(): array { return []; }
}
final class SiteStepA implements Queuety\Step {
    public function handle(array $state): array { site_ran('A', $state['site']); return ['a' => 1]; }
    public function config(): array { return []; }
}
final class SiteStepB implements Queuety\Step {
    public function handle(array $state): array { site_ran('B', $state['site']); return ['b' => $state['a'] + 1]; }
    public function config(): array { return []; }
}
final class SiteStepC implements Queuety\Step {
    public function handle(array $state): array { site_ran('C', $state['site'] . ' ' . $state['b']); return []; }
    public function config(): array { return []; }
}
`), 0o644))
	ctx := context.Background()
	want := map[string]int{}
	dispatch := func(prefix, url string) {
		t.Helper()
		runOK(t, on(dsn, "--prefix", prefix, "migrate")...)
		c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: prefix})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Dispatch(ctx, "SiteJob", map[string]any{"site": prefix})
		require.NoError(t, err)
		d, err := workflow.New("three").Then("SiteStepA").Then("SiteStepB").Then("SiteStepC").
			Build(phpjson.NewObject().Set("site", phpjson.String(prefix)))
		require.NoError(t, err)
		_, _, err = c.DispatchWorkflow(ctx, d)
		require.NoError(t, err)
		for _, what := range []string{"job " + prefix, "A " + prefix, "B " + prefix, "C " + prefix + " 2"} {
			want["example.test"+url+" "+what] = 1
		}
	}
	dispatch("wp_", "/")
	for i, p := range paths {
		dispatch(fmt.Sprintf("wp_%d_", i+2), p)
	}
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)

	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--network", networkWPConfig(t, dsn), "--poll-interval", "20ms", "--sites-reread", "2s",
		"--php", "php "+worker+" --wp-load "+wpLoad)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc := startCmd(t, cmd)
	exited := proc.exited
	got := func() map[string]int {
		m := map[string]int{}
		b, _ := os.ReadFile(record)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				m[l]++
			}
		}
		return m
	}
	waitRuns := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(120 * time.Second)
		for total(got()) < n {
			select {
			case <-exited:
				t.Fatalf("work exited early\nstderr:\n%s", stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d handler runs after 120s: %v\nstderr:\n%s", what, total(got()), n, got(), stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := time.Now()
	waitRuns("every subsite's job and workflow", 4*networkSubsites)
	t.Logf("%d subsites drained %v after start", networkSubsites, time.Since(start))

	// A subsite created while work runs: served after the next re-read,
	// no SIGHUP sent.
	id := testdb.AddBlog(t, dsn, "wp_", "/late/")
	added := time.Now()
	dispatch(fmt.Sprintf("wp_%d_", id), "/late/")
	waitRuns("the subsite added during the run", 4*(networkSubsites+1))
	t.Logf("the added subsite served %v after it was created (re-read every 2s)", time.Since(added))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-exited
	require.Equal(t, want, got(), "each subsite's job and workflow steps ran once, in the pool loaded for its URL")
	db := openDB(t, dsn)
	for i := 1; i <= networkSubsites+1; i++ {
		p := "wp_"
		if i > 1 {
			p = fmt.Sprintf("wp_%d_", i)
		}
		if i == networkSubsites+1 {
			p = fmt.Sprintf("wp_%d_", id)
		}
		require.Equal(t, 4, count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs` WHERE status = 'completed' AND attempts = 1"), p)
		require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_workflows` WHERE status = 'completed'"), p)
	}
}

// TestBenchSites: bench sites serves sites over several databases, with
// every per-site loop on (--loops), reports the idle (with a busy
// neighbour), latency and skewed-drain figures, and drops every database
// it made.
func TestBenchSites(t *testing.T) {
	t.Parallel()
	r := runOK(t, "bench", "sites", "--sites", "4", "--per-database", "2", "--warmup", "0s", "--idle", "500ms",
		"--samples", "3", "--skew-sites", "2", "--skew-jobs", "20", "--job-time", "0s", "--loops", "--noise", "50", "--json")
	var res cli.SitesBenchResult
	decodeJSON(t, r, &res)
	require.Equal(t, 4, res.Sites)
	require.Equal(t, 2, res.Databases)
	require.Equal(t, "sites", res.Mode)
	require.True(t, res.Loops)
	require.Positive(t, res.StatementsPerSec, "the batched looks are statements")
	require.Positive(t, res.IdleLooks.Polls, "the look's polls")
	require.Equal(t, res.IdleLooks.Looks, res.IdleLooks.Writes+res.IdleLooks.Interval+res.IdleLooks.Changed+res.IdleLooks.Blind)
	require.Equal(t, 50, res.Noise)
	require.Positive(t, res.NoisePerSec, "the neighbour's rows")
	require.Positive(t, res.LatencyP50ms)
	require.GreaterOrEqual(t, res.LatencyP99ms, res.LatencyP50ms)
	require.Positive(t, res.DrainSecs)
	require.NotEmpty(t, res.WorstSite)
	require.Len(t, res.OpenJobsReadMS, 3, "reads of every site's open jobs")
	tag := regexp.MustCompile(`databases (queuety_bsites_[0-9a-f]+)_N`).FindStringSubmatch(r.stderr)
	require.NotNil(t, tag, r.stderr)
	db := openDB(t, newDB(t))
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name LIKE ?", tag[1]+"%"), "dropped")

	r = run(t, "bench", "sites", "--sites", "2", "--plain")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--plain: only with --sites 1")
	r = run(t, "bench", "sites", "--sites", "20", "--skew-jobs", "20")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--skew-jobs 20: too few for --skew-sites 10")
	r = run(t, "bench", "sites", "--sites", "2", "--skew-sites", "2", "--poll-interval", "100ms", "--idle-look-interval", "50ms")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--idle-look-interval 50ms: at least --poll-interval 100ms")
}
