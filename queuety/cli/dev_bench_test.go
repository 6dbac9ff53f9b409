package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

// `dev` migrates a fresh database, dispatches demo jobs, prints progress
// every second and, with --exit-when-drained, stops once they are done.
// Five demo jobs are all queuety.sleep of 100-1000 ms (every tenth is a
// failing one), so this takes two to three seconds.
func TestDevExitsWhenDrained(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	start := time.Now()
	r := runOK(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "5", "--demo-workflows=false")...)
	t.Logf("dev took %s", time.Since(start).Round(time.Millisecond))

	require.Contains(t, r.stdout, fmt.Sprintf("migrated: %d tables created", len(store.TableSuffixes())+len(store.OwnTableSuffixes())))
	require.Contains(t, r.stdout, `dispatched 5 demo jobs to queue "default"`)
	progress := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d pending \d+, processing \d+, completed \d+, buried \d+ \| worker: \d+ completed, \d+ retried, \d+ buried, \d+ running$`)
	require.NotEmpty(t, progress.FindAllString(r.stdout, -1), r.String())
	// The last progress line shows the drained queue; the worker's own
	// counters are bumped just after its writes, so they may lag a tick.
	require.Regexp(t, `(?m)pending 0, processing 0, completed 5, buried 0 \| worker: \d completed, 0 retried, 0 buried, \d running\nworker stopped\n$`, r.stdout)
	require.Contains(t, r.stderr, "worker stopped") // the logger's line

	db := openDB(t, dsn)
	require.Equal(t, 5, count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'completed' AND handler = 'queuety.sleep'"))

	// A second run finds the schema in place and says nothing about it.
	r = runOK(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "1", "--concurrency", "2", "--demo-workflows=false")...)
	require.NotContains(t, r.stdout, "migrated:")
	require.Contains(t, r.stdout, "completed 6")
}

// With ten demo jobs one is queuety.fail with max_attempts 2 and a 1 s
// backoff: it fails, is retried once, then buried.
func TestDevDemoFailureIsRetriedThenBuried(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "10", "--concurrency", "10", "--demo-workflows=false")...)
	require.Regexp(t, `pending 0, processing 0, completed 9, buried 1 \| worker: .*\nworker stopped\n$`, r.stdout)
	db := openDB(t, dsn)
	var buried struct {
		ID       int64  `db:"id"`
		Handler  string `db:"handler"`
		Attempts int    `db:"attempts"`
		Message  string `db:"error_message"`
	}
	require.NoError(t, db.Get(&buried, "SELECT id, handler, attempts, error_message FROM `"+jobsTable+"` WHERE status = 'buried'"))
	require.Equal(t, "queuety.fail", buried.Handler)
	require.Equal(t, 2, buried.Attempts)
	require.Equal(t, "demo failure 9", buried.Message)
	// Spec §4.3: retryable failure started, failed, retried; terminal started, buried.
	require.Equal(t, []string{"started", "failed", "retried", "started", "buried"}, logEvents(t, db, buried.ID))
}

func TestDevFlagErrors(t *testing.T) {
	t.Parallel()
	r := run(t, "--dsn", "root@tcp(127.0.0.1:3306)/", "dev", "--exit-when-drained")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "no database")
	r = run(t, "--dsn", "root@tcp(127.0.0.1:3306)/x", "dev", "--concurrency", "0")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--concurrency")
}

func TestBenchDrainJSON(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "bench", "jobs", "--count", "500", "--json")...)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.Equal(t, "drain", res["mode"])
	require.EqualValues(t, 500, res["jobs"])
	require.EqualValues(t, 200, res["concurrency"])
	require.Greater(t, res["jobs_per_second"], 0.0)
	require.Greater(t, res["drain_seconds"], 0.0)
	require.EqualValues(t, 1000, res["log_rows"])
	require.Greater(t, res["peak_rss_mib"], 0.0)
	require.Contains(t, res["server"], "MariaDB")
	// The test server runs on this machine, so its CPU is read too.
	cpu := res["cpu"].(map[string]any)
	require.Equal(t, "job", cpu["unit"])
	require.Greater(t, cpu["daemon_us"], 0.0)
	require.Equal(t, true, cpu["server_measured"], "the server's pid file and /proc entry were not found")
	t.Logf("bench drain: %.0f jobs/s, CPU per job: daemon %.0f µs, server %.0f µs", res["jobs_per_second"], cpu["daemon_us"], cpu["server_us"])

	// Text output; bench empties the tables first, so counts start over.
	r = runOK(t, on(dsn, "bench", "jobs", "--count", "100", "--concurrency", "20")...)
	require.Regexp(t, `(?m)^inserted 100 jobs in \d+\.\d\ds\ndrained  100 jobs in \d+\.\d\ds: \d+ jobs/s \(concurrency 20, 200 log rows\)\nCPU per job: daemon \d+ µs, server (\d+ µs|n/a \(not on this machine\))\npeak RSS \d+\.\d MiB, server .*MariaDB`, r.stdout)
}

func TestBenchSteadyJSON(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, on(dsn, "bench", "jobs", "--rate", "50", "--duration", "1s", "--json")...)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.Equal(t, "steady", res["mode"])
	require.Contains(t, res, "latency_p50_ms", r.String())
	require.Contains(t, res, "latency_p99_ms", r.String())
	require.Greater(t, res["latency_p50_ms"], 0.0)
	require.GreaterOrEqual(t, res["latency_p99_ms"], res["latency_p50_ms"])
	jobs := res["jobs"].(float64)
	require.True(t, jobs >= 10 && jobs <= 51, "%v jobs: about rate × duration (fewer on a loaded machine)", jobs)
	require.Equal(t, 2*jobs, res["log_rows"])
	t.Logf("bench steady: p50 %.1f ms, p99 %.1f ms over %.0f jobs", res["latency_p50_ms"], res["latency_p99_ms"], jobs)
}

func TestBenchFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--count", "0"},
		{"--concurrency", "0"},
		{"--rate", "-1"},
	} {
		r := run(t, on("root@tcp(127.0.0.1:3306)/unused", append([]string{"bench", "jobs"}, args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.True(t, strings.Contains(r.stderr, "--count") && strings.Contains(r.stderr, "--rate"), r.String())
	}
}

// Ctrl-C in the middle of a run drops the database bench created: the
// stock binary inserts more jobs than it can in the test's time, is
// interrupted once its database exists, and exits 130 with it gone.
func TestBenchInterruptedDropsItsDatabase(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	cmd := exec.Command(stockBinary(t), on(dsn, "bench", "jobs", "--count", "3000000")...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	name := regexp.MustCompile(`running in a new database (queuety_bench_[0-9a-f]+)`)
	db, err := sqlx.Open("mysql", testdb.ServerDSN())
	require.NoError(t, err)
	defer db.Close()
	exists := func(n string) bool {
		var c int
		require.NoError(t, db.Get(&c, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", n))
		return c == 1
	}
	var bench string
	require.Eventually(t, func() bool {
		if m := name.FindStringSubmatch(stderr.String()); m != nil && exists(m[1]) {
			bench = m[1]
			return true
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "bench never created its database: %s", &stderr)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	require.Equal(t, 130, exit.ExitCode(), stderr.String())
	require.False(t, exists(bench), "database %s left behind: %s", bench, &stderr)
	require.Contains(t, stderr.String(), "dropping database "+bench)
}

// --bare drains with the worker's statements and no worker: every job
// completed with its started and completed log rows, as the worker leaves
// them.
func TestBenchBareJSON(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := runOK(t, "bench", "jobs", "--bench-dsn", dsn, "--count", "700", "--bare", "--json")
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.Equal(t, "bare", res["mode"])
	require.EqualValues(t, 1400, res["log_rows"])
	require.Greater(t, res["jobs_per_second"], 0.0)
	db := openDB(t, dsn)
	require.Equal(t, 700, count(t, db, "SELECT COUNT(*) FROM `bench_queuety_jobs` WHERE status = 'completed' AND attempts = 1 AND completed_at IS NOT NULL"))
	require.Equal(t, 700, count(t, db, "SELECT COUNT(*) FROM `bench_queuety_logs` WHERE event = 'completed' AND attempt = 1"))

	r = runOK(t, "bench", "jobs", "--bench-dsn", dsn, "--count", "50", "--bare")
	require.Contains(t, r.stdout, "bare claim/complete loop, no worker")

	r = run(t, on(dsn, "bench", "jobs", "--bare", "--rate", "10")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--bare")
}
