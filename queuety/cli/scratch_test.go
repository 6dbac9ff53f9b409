package cli_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// benchDatabase is the database a bench run says it created.
var benchDatabase = regexp.MustCompile(`bench: running in a new database (queuety_bench_[0-9a-f]{8}) on `)

// siteWithJobs is a migrated database holding one job of the site's own
// under both the default prefix and bench's.
func siteWithJobs(t *testing.T) string {
	t.Helper()
	dsn := newDB(t)
	runOK(t, on(dsn, "--prefix", "bench_", "migrate")...)
	runOK(t, on(dsn, "dispatch", `App\Jobs\Important`)...)
	runOK(t, on(dsn, "--prefix", "bench_", "dispatch", `App\Jobs\Important`)...)
	return dsn
}

func requireSiteIntact(t *testing.T, dsn string) {
	t.Helper()
	db := openDB(t, dsn)
	for _, table := range []string{"wp_queuety_jobs", "bench_queuety_jobs"} {
		require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM `"+table+"` WHERE handler = 'App\\\\Jobs\\\\Important'"), table)
	}
}

// With --dsn, bench runs in a new database on that server, drops it at
// the end, and never touches the database --dsn names.
func TestBenchNeverEmptiesTheConfiguredDatabase(t *testing.T) {
	t.Parallel()
	dsn := siteWithJobs(t)
	r := runOK(t, on(dsn, "bench", "jobs", "--count", "50", "--concurrency", "8", "--json")...)
	requireSiteIntact(t, dsn)
	m := benchDatabase.FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.String())
	require.Equal(t, 0, count(t, openDB(t, dsn), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", m[1]), "dropped at the end")
}

// QUEUETY_DSN exported for the site is the same: bench never empties it.
// t.Setenv forbids t.Parallel.
func TestBenchIgnoresQueuetyDSNDatabase(t *testing.T) {
	dsn := siteWithJobs(t)
	t.Setenv("QUEUETY_DSN", dsn)
	runOK(t, "bench", "workflows", "--count", "5", "--steps", "1", "--concurrency", "4")
	requireSiteIntact(t, dsn)
}

// --bench-dsn names the database bench empties: it refuses one holding
// rows bench did not write, and runs in an empty one, which it marks so
// the next run may empty it again.
func TestBenchDSNRefusesForeignRows(t *testing.T) {
	t.Parallel()
	site := siteWithJobs(t)
	r := run(t, "bench", "jobs", "--bench-dsn", site, "--count", "10")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--bench-dsn: table bench_queuety_jobs holds rows that bench did not write", r.String())
	requireSiteIntact(t, site)
	require.False(t, tableExists(t, site, "queuety_go_markers"), "a refused database is left as it was")

	// Rows in any other table (a site's posts) are someone else's too.
	other := testdb.New(t)
	odb := openDB(t, other)
	exec1(t, odb, "CREATE TABLE wp_posts (id INT PRIMARY KEY)")
	exec1(t, odb, "INSERT INTO wp_posts VALUES (1)")
	r = run(t, "bench", "jobs", "--bench-dsn", other, "--count", "10")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "table wp_posts holds rows", r.String())
	require.False(t, tableExists(t, other, "bench_queuety_jobs"), "a refused database is left as it was")

	scratch := testdb.New(t)
	for range 2 {
		r = runOK(t, "bench", "jobs", "--bench-dsn", scratch, "--count", "20", "--concurrency", "4")
		require.Contains(t, r.stdout, "drained  20 jobs")
	}
	require.Equal(t, 20, count(t, openDB(t, scratch), "SELECT COUNT(*) FROM `bench_queuety_jobs`"), "emptied before the second run")
}

// dev puts demo jobs (some buried on purpose) only into a database of its
// own, or anywhere with --yes.
func TestDevRefusesForeignRowsWithoutYes(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	runOK(t, on(dsn, "dispatch", "queuety.noop")...) // dev's worker runs it too, so --yes drains
	r := run(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "1")...)
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "table wp_queuety_jobs holds rows that dev did not write", r.String())
	require.Contains(t, r.stderr, "--yes", r.String())
	require.Equal(t, 1, count(t, openDB(t, dsn), "SELECT COUNT(*) FROM `"+jobsTable+"`"), "nothing dispatched")
	require.False(t, tableExists(t, dsn, "queuety_go_markers"), "a refused database is left as it was")

	r = runOK(t, on(dsn, "dev", "--exit-when-drained", "--demo-jobs", "1", "--yes")...)
	require.Contains(t, r.stdout, "dispatched 1 demo jobs")
}
