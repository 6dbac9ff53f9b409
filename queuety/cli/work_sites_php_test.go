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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
)

// phpSites is a directory of single WordPress sites for work --sites
// --php: each <dir>/<name>/ holds a wp-config.php (one database, the
// table prefix <name>_) and a stand-in wp-load.php that registers the
// handler "record", which appends "<name> <payload n> <pid>" to
// <dir>/ran. A pool's processes carry their site's wp-load.php on their
// command line, so the test counts each site's processes in /proc.
type phpSites struct {
	t   *testing.T
	dsn string
	dir string
}

func newPHPSites(t *testing.T, dsn string) *phpSites {
	return &phpSites{t: t, dsn: dsn, dir: t.TempDir()}
}

// add makes a site with its tables; load, when given, replaces its
// wp-load.php.
func (p *phpSites) add(name string, load ...string) string {
	t := p.t
	t.Helper()
	cfg, err := mysql.ParseDSN(p.dsn)
	require.NoError(t, err)
	dir := filepath.Join(p.dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	wpConfig := filepath.Join(dir, "wp-config.php")
	require.NoError(t, os.WriteFile(wpConfig, []byte(fmt.Sprintf("<?php\ndefine('DB_NAME', '%s');\ndefine('DB_USER', '%s');\ndefine('DB_PASSWORD', '%s');\ndefine('DB_HOST', '%s');\n$table_prefix = '%s_';\n",
		cfg.DBName, cfg.User, cfg.Passwd, cfg.Addr, name)), 0o600))
	src := fmt.Sprintf(`<?php
\Queuety\Bridge\Handlers::register('record', static function (array $p): void {
    file_put_contents(%q, %q . ' ' . $p['n'] . ' ' . getmypid() . "\n", FILE_APPEND | LOCK_EX);
});
`, filepath.Join(p.dir, "ran"), name)
	if len(load) > 0 {
		src = load[0]
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wp-load.php"), []byte(src), 0o644))
	runOK(t, on(p.dsn, "--prefix", name+"_", "migrate")...)
	return wpConfig
}

// dispatch adds n jobs of handler to the site, payload {"n": "<i>"}.
func (p *phpSites) dispatch(name, handler string, from, n int) {
	p.t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: p.dsn, TablePrefix: name + "_"})
	require.NoError(p.t, err)
	defer c.Close()
	for i := from; i < from+n; i++ {
		_, err := c.Dispatch(ctx, handler, map[string]any{"n": strconv.Itoa(i)})
		require.NoError(p.t, err)
	}
}

// runs are the PHP jobs run, "name n" → times.
func (p *phpSites) runs() map[string]int {
	m := map[string]int{}
	b, _ := os.ReadFile(filepath.Join(p.dir, "ran"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			m[f[0]+" "+f[1]]++
		}
	}
	return m
}

// procs counts the live PHP processes of each site (a zombie's command
// line is empty).
func (p *phpSites) procs() map[string]int {
	out := map[string]int{}
	entries, err := os.ReadDir("/proc")
	require.NoError(p.t, err)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if rest, ok := strings.CutPrefix(arg, p.dir+"/"); ok && strings.HasSuffix(rest, "/wp-load.php") {
				out[strings.TrimSuffix(rest, "/wp-load.php")]++
			}
		}
	}
	return out
}

// sitePool is a site's php_pool on /sites.
type sitePool struct {
	State      string   `json:"state"`
	Error      string   `json:"error"`
	Starts     int      `json:"starts"`
	SharedWith []string `json:"shared_with"`
}

// sitesPools reads /sites: each site's PHP pool, by site name.
func sitesPools(t *testing.T, addr string) map[string]sitePool {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/sites")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var sites []struct {
		Name    string
		PHPPool *sitePool `json:"php_pool"`
	}
	require.NoError(t, json.Unmarshal(body, &sites), string(body))
	out := map[string]sitePool{}
	for _, s := range sites {
		require.NotNil(t, s.PHPPool, "%s: no php_pool on /sites: %s", s.Name, body)
		out[s.Name] = *s.PHPPool
	}
	return out
}

// sitesDaemon is a running `queuety work` with its /sites address.
type sitesDaemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	d      *daemon
	stderr *syncBuffer
	addr   string
}

// workDaemon starts `queuety work` with args and waits for its listener.
func workDaemon(t *testing.T, args ...string) *sitesDaemon {
	t.Helper()
	w := &sitesDaemon{t: t, stderr: &syncBuffer{}}
	w.cmd = exec.Command(stockBinary(t), append([]string{"work", "--poll-interval", "20ms", "--metrics-listen", "127.0.0.1:0"}, args...)...)
	w.cmd.Stdout, w.cmd.Stderr = io.Discard, w.stderr
	w.d = startCmd(t, w.cmd)
	waitFor(t, 60*time.Second, "the /sites listener", func() bool {
		w.alive()
		m := regexp.MustCompile(`/sites on http://(\S+)`).FindStringSubmatch(w.stderr.String())
		if m != nil {
			w.addr = m[1]
		}
		return m != nil
	})
	return w
}

// alive fails the test if work exited.
func (w *sitesDaemon) alive() {
	select {
	case <-w.d.exited:
		w.t.Fatalf("work exited: %v\nstderr:\n%s", w.d.waitErr, w.stderr.String())
	default:
	}
}

// stop sends SIGTERM and waits for work to exit.
func (w *sitesDaemon) stop() {
	w.t.Helper()
	require.NoError(w.t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w.d.exited:
	case <-time.After(60 * time.Second):
		w.t.Fatalf("work still running 60s after SIGTERM\nstderr:\n%s", w.stderr.String())
	}
}

// TestWorkSitesPHPPoolsOnDemand: work --sites --php starts no PHP process
// while the sites have only Go jobs; PHP jobs on five sites with
// --php-pools 2 each run once, and never more than two sites have PHP
// processes alive (counted from /proc all along); with --php-idle 1s
// every pool is stopped once idle, and the next PHP job starts its site's
// pool again; a site whose PHP cannot load is reported failed on /sites,
// its job left pending with its attempt unspent, the others served.
func TestWorkSitesPHPPoolsOnDemand(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	p := newPHPSites(t, dsn)
	names := []string{"s1", "s2", "s3", "s4", "s5"}
	byPath := map[string]string{}
	for _, n := range names {
		byPath[p.add(n)] = n
		p.dispatch(n, builtins.Noop, 0, 3)
	}
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)
	w := workDaemon(t, "--sites", filepath.Join(p.dir, "*", "wp-config.php"), "--php", "php "+worker,
		"--php-pools", "2", "--php-idle", "1s", "--sites-reread", "1h")
	alive, addr := w.alive, w.addr
	db := openDB(t, dsn)
	completed := func(n string) int {
		return count(t, db, "SELECT COUNT(*) FROM `"+n+"_queuety_jobs` WHERE status = 'completed' AND attempts = 1")
	}
	waitFor(t, 90*time.Second, "the Go jobs", func() bool {
		alive()
		for _, n := range names {
			if completed(n) != 3 {
				return false
			}
		}
		return true
	})
	require.Empty(t, p.procs(), "Go jobs only: no PHP process")
	for path, pool := range sitesPools(t, addr) {
		require.Equal(t, sitePool{State: "none"}, pool, byPath[path])
	}

	// PHP jobs on every site, two pools at most.
	var most atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(len(p.procs())); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	want := map[string]int{}
	for _, n := range names {
		p.dispatch(n, "record", 0, 4)
		for i := range 4 {
			want[fmt.Sprintf("%s %d", n, i)] = 1
		}
	}
	waitFor(t, 120*time.Second, "every PHP job", func() bool {
		alive()
		for _, n := range names {
			if completed(n) != 3+4 {
				return false
			}
		}
		return true
	})
	close(stop)
	<-sampled
	require.Equal(t, want, p.runs(), "each PHP job once, in its site's pool")
	require.Positive(t, most.Load())
	require.LessOrEqual(t, most.Load(), int64(2), "sites with PHP processes alive at once (--php-pools 2)")

	// Idle for 1s: every pool stopped; the next job starts one again.
	waitFor(t, 60*time.Second, "the idle pools stopped", func() bool {
		alive()
		for _, pool := range sitesPools(t, addr) {
			if pool.State != "none" {
				return false
			}
		}
		return len(p.procs()) == 0
	})
	s1 := filepath.Join(p.dir, "s1", "wp-config.php")
	before := sitesPools(t, addr)[s1].Starts
	require.Positive(t, before)
	p.dispatch("s1", "record", 4, 1)
	want["s1 4"] = 1
	waitFor(t, 60*time.Second, "s1's next PHP job", func() bool { alive(); return completed("s1") == 3+5 })
	require.Equal(t, want, p.runs())
	require.Equal(t, before+1, sitesPools(t, addr)[s1].Starts, "s1's pool started again")

	// A site whose PHP cannot load: reported, its job kept.
	bad := p.add("s6", "<?php\nfwrite(STDERR, \"this site's bootstrap is broken\\n\");\nexit(1);\n")
	p.dispatch("s6", "record", 0, 1)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, 60*time.Second, "s6 reported", func() bool {
		alive()
		pool, ok := sitesPools(t, addr)[bad]
		return ok && pool.State == "failed" && strings.Contains(pool.Error, "failed to start")
	})
	p.dispatch("s2", "record", 4, 1)
	want["s2 4"] = 1
	waitFor(t, 60*time.Second, "s2 served meanwhile", func() bool { alive(); return completed("s2") == 3+5 })
	require.Equal(t, want, p.runs())
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM s6_queuety_jobs WHERE status = 'pending' AND attempts = 0"),
		"s6's job waits, its attempt unspent")
	require.Contains(t, w.stderr.String(), "PHP pool failed to start")
	w.stop()
	require.Empty(t, p.procs(), "no PHP process left")
}

// TestWorkSitesPHPShare: with --php-share, single sites whose PHP command
// is the same (DSN PREFIX lines under one --php) run in one pool; without
// it, each has its own.
func TestWorkSitesPHPShare(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	p := newPHPSites(t, dsn)
	app := filepath.Join(p.dir, "app.php")
	require.NoError(t, os.WriteFile(app, []byte(fmt.Sprintf(`<?php
\Queuety\Bridge\Handlers::register('record', static function (array $p): void {
    file_put_contents(%q, $p['site'] . ' ' . $p['n'] . ' ' . getmypid() . "\n", FILE_APPEND | LOCK_EX);
});
`, filepath.Join(p.dir, "ran"))), 0o644))
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)
	for _, share := range []bool{true, false} {
		prefixes := []string{"a", "b", "c"}
		if !share {
			prefixes = []string{"d", "e", "f"}
		}
		list := filepath.Join(p.dir, fmt.Sprintf("sites-%v.txt", share))
		var lines []string
		for _, n := range prefixes {
			runOK(t, on(dsn, "--prefix", n+"_", "migrate")...)
			lines = append(lines, dsn+" "+n+"_")
			c, err := queuety.Open(context.Background(), queuety.Config{DSN: dsn, TablePrefix: n + "_"})
			require.NoError(t, err)
			for i := range 3 {
				_, err := c.Dispatch(context.Background(), "record", map[string]any{"site": n, "n": strconv.Itoa(i)})
				require.NoError(t, err)
			}
			require.NoError(t, c.Close())
		}
		require.NoError(t, os.WriteFile(list, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
		args := []string{"--sites", list, "--php", "php " + worker + " --bootstrap " + app}
		if share {
			args = append(args, "--php-share")
		}
		w := workDaemon(t, args...)
		pids := map[string]map[string]bool{} // site → pids
		waitFor(t, 90*time.Second, "every job", func() bool {
			w.alive()
			b, _ := os.ReadFile(filepath.Join(p.dir, "ran"))
			clear(pids)
			n := 0
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.Fields(l)
				if len(f) == 3 && slices.Contains(prefixes, f[0]) {
					if pids[f[0]] == nil {
						pids[f[0]] = map[string]bool{}
					}
					pids[f[0]][f[2]] = true
					n++
				}
			}
			return n == 9
		})
		all := map[string]bool{}
		for _, ps := range pids {
			for pid := range ps {
				all[pid] = true
			}
		}
		pools := sitesPools(t, w.addr)
		if share {
			require.Len(t, all, 1, "one PHP process ran the three sites' jobs: %v", pids)
			for name, pool := range pools {
				require.Len(t, pool.SharedWith, 2, name)
				require.Equal(t, 1, pool.Starts, name)
			}
		} else {
			require.Len(t, all, 3, "a process a site: %v", pids)
			for name, pool := range pools {
				require.Empty(t, pool.SharedWith, name)
			}
		}
		w.stop()
	}
}

// TestWorkSitesPHPFlagErrors: bad pool flags are refused, naming the flag.
func TestWorkSitesPHPFlagErrors(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sites", "x.txt", "--php", "php w", "--php-idle", "-1s"}, "--php-idle -1s: must not be negative"},
		{[]string{"--sites", "x.txt", "--php", "php w", "--php-pools", "0"}, "--php-pools 0: must be at least 1"},
		{[]string{"--network", networkWPConfig(t, dsn), "--php", "php w", "--php-share"}, "--php-share: only with --sites"},
	} {
		r := run(t, on(dsn, append([]string{"work"}, tc.args...)...)...)
		require.NotZero(t, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
	}
}

// runStock runs the queuety binary to its exit; a run still going after
// three minutes (a drain that hangs) is killed and fails the test.
func runStock(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	cmd := exec.CommandContext(ctx, stockBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "queuety %q still running after 3m\n[stderr]\n%s", args, errb.String())
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

// TestFlushSitesPHPDown: flush --sites --php over three sites, one whose
// PHP cannot load, ends once its pool has failed to start twice in a row:
// exit 1 naming the site and the pool's error; every job of the other
// sites ran once, the broken site's Go jobs too, and its PHP jobs are
// pending with their attempts unspent. work --once and --max-jobs end
// too, and leave them so.
func TestFlushSitesPHPDown(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	p := newPHPSites(t, dsn)
	want := map[string]int{}
	for _, n := range []string{"s1", "s2"} {
		p.add(n)
		p.dispatch(n, builtins.Noop, 0, 2)
		p.dispatch(n, "record", 0, 3)
		for i := range 3 {
			want[fmt.Sprintf("%s %d", n, i)] = 1
		}
	}
	bad := p.add("s3", "<?php\nfwrite(STDERR, \"this site's bootstrap is broken\\n\");\nexit(1);\n")
	p.dispatch("s3", builtins.Noop, 0, 2)
	p.dispatch("s3", "record", 0, 3)
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)
	sites := []string{"--sites", filepath.Join(p.dir, "*", "wp-config.php"), "--php", "php " + worker}
	db := openDB(t, dsn)
	completed := func(n string) int {
		return count(t, db, "SELECT COUNT(*) FROM `"+n+"_queuety_jobs` WHERE status = 'completed' AND attempts = 1")
	}
	phpWaiting := func() int {
		return count(t, db, "SELECT COUNT(*) FROM s3_queuety_jobs WHERE handler = 'record' AND status = 'pending' AND attempts = 0")
	}
	named := func(r result) {
		t.Helper()
		require.Equal(t, 1, r.code, r.String())
		require.Contains(t, r.stderr, "1 of 3 sites not served: "+bad+": the site's PHP pool failed to start 2 times in a row", r.String())
		require.Contains(t, r.stderr, "this site's bootstrap is broken", r.String())
	}

	r := runStock(t, append([]string{"flush"}, sites...)...)
	named(r)
	require.Equal(t, "Flushed: 12 jobs (12 completed, 0 retried, 0 buried) over 3 sites.\n", r.stdout, r.String())
	require.Equal(t, want, p.runs(), "each PHP job of s1 and s2 once")
	require.Equal(t, 5, completed("s1"))
	require.Equal(t, 5, completed("s2"))
	require.Equal(t, 2, completed("s3"), "s3's Go jobs ran")
	require.Equal(t, 3, phpWaiting(), "s3's PHP jobs wait, attempts unspent")

	// --once: one job on each site that can run one.
	p.dispatch("s1", "record", 3, 1)
	p.dispatch("s2", "record", 3, 1)
	want["s1 3"], want["s2 3"] = 1, 1
	r = runStock(t, append([]string{"work", "--once"}, sites...)...)
	named(r)
	require.Contains(t, r.stdout, "Workers stopped (empty): 2 jobs", r.String())
	require.Equal(t, want, p.runs())

	// --max-jobs: a budget the sites that can run take.
	p.dispatch("s1", "record", 4, 2)
	want["s1 4"], want["s1 5"] = 1, 1
	r = runStock(t, append([]string{"work", "--max-jobs", "2", "--json"}, sites...)...)
	var sum struct {
		Stopped   string
		Processed int
	}
	decodeJSON(t, r, &sum)
	require.Equal(t, "max-jobs", sum.Stopped, r.String())
	require.Equal(t, 2, sum.Processed, r.String())
	if r.code != 0 { // s3's pool may have failed its retry by then
		named(r)
	}
	require.Equal(t, want, p.runs())
	require.Equal(t, 3, phpWaiting())
	require.Empty(t, p.procs(), "no PHP process left")
}
