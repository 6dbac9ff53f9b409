package cli_test

import (
	"context"
	"errors"
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

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
)

// dispatchTo dispatches one job of handler on the wpt_ tables of dsn (the
// prefix of testdata/wp-config.php) and returns its id.
func dispatchTo(t *testing.T, dsn, handler string, payload any) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn, TablePrefix: "wpt_"})
	require.NoError(t, err)
	defer c.Close()
	d, err := c.Dispatch(ctx, handler, payload)
	require.NoError(t, err)
	return d.ID
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestWorkSitesOwnSettings: `work --sites` runs each site by its own
// wp-config's QUEUETY_* settings. Site a (stale timeout 3600 s, linear
// backoff, 1 s execution time, debug rows) and site b (the defaults: 600
// s, exponential, 300 s) each rescue, retry and time out by their own; a
// site whose define is refused is reported by name, constant and reason
// and not served while the others are. On SIGHUP a site whose wp-config
// changed is restarted with its new settings and the others are left
// alone, and the fixed site is served.
func TestWorkSitesOwnSettings(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsnA, dsnB, dsnC := testdb.New(t), testdb.New(t), testdb.New(t)
	pathA := writeWPConfig(t, dsnA, "define( 'QUEUETY_STALE_TIMEOUT', 3600 );\ndefine( 'QUEUETY_RETRY_BACKOFF', 'linear' );\n"+
		"define( 'QUEUETY_MAX_EXECUTION_TIME', 1 );\ndefine( 'QUEUETY_DEBUG', true );")
	pathB := writeWPConfig(t, dsnB, "/* __EXTRA__ */")
	pathC := writeWPConfig(t, dsnC, "define( 'QUEUETY_STALE_TIMEOUT', 0 );")
	for _, dsn := range []string{dsnA, dsnB, dsnC} {
		runOK(t, on(dsn, "--prefix", "wpt_", "migrate")...)
	}
	dbA, dbB, dbC := openDB(t, dsnA), openDB(t, dsnB), openDB(t, dsnC)
	// Rows a PHP worker holds: 20 minutes old in both sites (stale for b
	// only), two hours old in a (stale for a too: its sweep ran). Attempt 3
	// of 5: linear backoff waits 180 s, exponential 240 s.
	youngA, oldA := dispatchTo(t, dsnA, builtins.Noop, nil), dispatchTo(t, dsnA, builtins.Noop, nil)
	youngB := dispatchTo(t, dsnB, builtins.Noop, nil)
	hold := "UPDATE wpt_queuety_jobs SET status = 'processing', attempts = 3, max_attempts = 5, reserved_at = NOW() - INTERVAL ? MINUTE WHERE id = ?"
	exec1(t, dbA, hold, 20, youngA)
	exec1(t, dbA, hold, 120, oldA)
	exec1(t, dbB, hold, 20, youngB)
	// A 2.5 s job: past a's time limit, well within b's.
	sleepA := dispatchTo(t, dsnA, builtins.Sleep, map[string]any{"ms": 2500})
	sleepB := dispatchTo(t, dsnB, builtins.Sleep, map[string]any{"ms": 2500})
	jobC := dispatchTo(t, dsnC, builtins.Noop, nil)

	list := writeFile(t, "sites.txt", pathA+"\n"+pathB+"\n"+pathC+"\n")
	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "work", "--sites", list, "--rescue-schedule", "@every 1s", "--poll-interval", "20ms",
		"--sites-reread", "1h", "--metrics-listen", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc := startCmd(t, cmd)
	proc.stderr = &stderr
	wait := func(what string, cond func() bool) { t.Helper(); proc.waitWork(t, what, cond) }
	status := func(db interface {
		Get(any, string, ...any) error
	}, id int64) string {
		var s string
		require.NoError(t, db.Get(&s, "SELECT status FROM wpt_queuety_jobs WHERE id = ?", id))
		return s
	}
	wait("the stale sweeps and the sleeping jobs", func() bool {
		return status(dbA, oldA) == "pending" && status(dbB, youngB) == "pending" && status(dbB, sleepB) == "completed" &&
			count(t, dbA, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE id = ? AND status = 'pending' AND attempts = 1", sleepA) == 1
	})
	require.Equal(t, "processing", status(dbA, youngA), "20 minutes is not stale under site a's 3600 s")
	delay := "SELECT TIMESTAMPDIFF(SECOND, NOW(), available_at) FROM wpt_queuety_jobs WHERE id = ?"
	require.InDelta(t, 180, count(t, dbA, delay, oldA), 5, "site a: linear backoff after attempt 3")
	require.InDelta(t, 240, count(t, dbB, delay, youngB), 5, "site b: exponential backoff after attempt 3")
	require.Equal(t, 1, count(t, dbA, "SELECT COUNT(*) FROM wpt_queuety_logs WHERE job_id = ? AND error_message = ?",
		sleepA, "Job exceeded maximum execution time of 1 seconds."), "site a's 1 s limit failed the 2.5 s job")
	require.Positive(t, count(t, dbA, "SELECT COUNT(*) FROM wpt_queuety_logs WHERE event = 'debug'"), "site a writes debug rows")
	require.Zero(t, count(t, dbB, "SELECT COUNT(*) FROM wpt_queuety_logs WHERE event = 'debug'"), "site b does not")

	// Site c: named with its constant and why, not served; /readyz says so.
	require.Regexp(t, `msg="sites: site not served: its settings are refused" site=`+regexp.QuoteMeta(pathC)+
		` err="QUEUETY_STALE_TIMEOUT \(wp-config line \d+\) 0: must be at least 1 second`, stderr.String())
	addr := regexp.MustCompile(`/sites on http://(\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, addr, stderr.String())
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + addr[1] + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := readyz()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, pathC)
	require.Equal(t, "pending", status(dbC, jobC))

	// Site b turns debug rows on, site c's stale timeout is fixed; SIGHUP.
	edit := func(path, from, to string) {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(src), from)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), from, to, 1)), 0o600))
	}
	edit(pathB, "/* __EXTRA__ */", "define( 'QUEUETY_DEBUG', true );")
	edit(pathC, "'QUEUETY_STALE_TIMEOUT', 0 )", "'QUEUETY_STALE_TIMEOUT', 3600 )")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	wait("site c served", func() bool { return status(dbC, jobC) == "completed" })
	wait("site b restarted", func() bool {
		return strings.Contains(stderr.String(), `msg="sites: site stopped to apply its changed settings" site=`+pathB)
	})
	noop := dispatchTo(t, dsnB, builtins.Noop, nil)
	wait("site b's new job", func() bool { return status(dbB, noop) == "completed" })
	require.Positive(t, count(t, dbB, "SELECT COUNT(*) FROM wpt_queuety_logs WHERE event = 'debug'"), "site b writes debug rows now")
	require.Equal(t, 1, strings.Count(stderr.String(), `msg="sites: serving a new site" site=`+pathA+" "), "site a was left alone")
	wait("/readyz ready", func() bool { code, _ := readyz(); return code == http.StatusOK })

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-proc.exited:
		var ee *exec.ExitError
		if errors.As(proc.waitErr, &ee) {
			t.Fatalf("work exited with %v after SIGTERM\nstderr:\n%s", ee, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("work still running 30s after SIGTERM\nstderr:\n%s", stderr.String())
	}
}

// TestWorkSitesLimits: the cron exits with many sites. --once runs one job
// on each site; flush drains every site, each job once; --max-jobs is a
// total over the sites; --max-time stops every site; each exits 0 with a
// summary. A site whose setting is refused is not waited for and fails the
// run by name. --worker-id and --wp-config are refused with --sites.
func TestWorkSitesLimits(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	prefixes := []string{"wp_", "wp_2_", "wp_3_"}
	var lines []string
	for _, p := range prefixes {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
		dispatchNoops(t, dsn, p, 3)
		lines = append(lines, dsn+" "+p)
	}
	list := writeFile(t, "sites.txt", strings.Join(lines, "\n")+"\n")
	db := openDB(t, dsn)
	done := func(p string) int {
		return count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs` WHERE status = 'completed'")
	}
	var sum struct {
		Processed int
		Stopped   string
		Sites     []struct {
			Site      string
			Completed int
			Error     string
		}
	}

	r := runOK(t, "work", "--sites", list, "--once", "--json")
	decodeJSON(t, r, &sum)
	require.Equal(t, "empty", sum.Stopped, r.String())
	require.Equal(t, 3, sum.Processed)
	require.Len(t, sum.Sites, 3)
	for _, p := range prefixes {
		require.Equal(t, 1, done(p), "--once: one job on site %s", p)
	}

	r = runOK(t, "flush", "--sites", list)
	require.Equal(t, "Flushed: 6 jobs (6 completed, 0 retried, 0 buried) over 3 sites.\n", r.stdout, r.String())
	for _, p := range prefixes {
		require.Equal(t, 3, done(p), p)
	}

	for _, p := range prefixes {
		dispatchNoops(t, dsn, p, 4)
	}
	r = runOK(t, "work", "--sites", list, "--max-jobs", "5", "--concurrency", "8", "--json")
	decodeJSON(t, r, &sum)
	require.Equal(t, "max-jobs", sum.Stopped, r.String())
	require.Equal(t, 5, sum.Processed)
	require.Equal(t, 9+5, done("wp_")+done("wp_2_")+done("wp_3_"), "five jobs over the three sites")

	r = runOK(t, "flush", "--sites", list)
	require.Equal(t, "Flushed: 7 jobs (7 completed, 0 retried, 0 buried) over 3 sites.\n", r.stdout, r.String())
	r = runOK(t, "work", "--sites", list, "--max-time", "1s")
	require.Contains(t, r.stdout, "Workers stopped (max-time): 0 jobs", r.String())

	// A fourth site whose line sets a refused stale timeout.
	runOK(t, on(dsn, "--prefix", "wp_4_", "migrate")...)
	dispatchNoops(t, dsn, "wp_4_", 2)
	dispatchNoops(t, dsn, "wp_", 2)
	bad := writeFile(t, "bad.txt", strings.Join(lines, "\n")+"\n"+dsn+" wp_4_ QUEUETY_STALE_TIMEOUT=0\n")
	r = run(t, "flush", "--sites", bad)
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stdout, "Flushed: 2 jobs", r.String())
	require.Contains(t, r.stderr, "1 of 4 sites not served: ", r.String())
	require.Contains(t, r.stderr, "wp_4_: QUEUETY_STALE_TIMEOUT (sites line) 0: must be at least 1 second", r.String())
	require.Equal(t, 3+4+2, done("wp_"))
	require.Zero(t, done("wp_4_"))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "--sites", list, "--worker-id", "w1"}, "--worker-id is not available with --network or --sites: each site's worker has an id of its own"},
		{[]string{"--wp-config", "x.php", "work", "--sites", list}, "--sites reads each site's own wp-config.php; --wp-config (QUEUETY_WP_CONFIG) x.php cannot go with it"},
		{[]string{"work", "--sites", list, "--once", "--max-jobs", "2"}, "--once and --max-jobs"},
	} {
		r := run(t, tc.args...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
	}
}

// TestFlushNetwork: the cron exits serve a network too: flush --network
// drains every subsite, each job once, with the network's settings.
func TestFlushNetwork(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	testdb.Multisite(t, dsn, "wp_", "/a/", "/b/")
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		runOK(t, on(dsn, "--prefix", p, "migrate")...)
		dispatchNoops(t, dsn, p, 2)
	}
	r := runOK(t, "flush", "--network", networkWPConfig(t, dsn))
	require.Equal(t, "Flushed: 6 jobs (6 completed, 0 retried, 0 buried) over 3 sites.\n", r.stdout, r.String())
	db := openDB(t, dsn)
	for _, p := range []string{"wp_", "wp_2_", "wp_3_"} {
		require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM `"+p+"queuety_jobs` WHERE status = 'completed' AND attempts = 1"), p)
	}
}
