package chaos

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// requirePHP fails (never skips) when php with pdo_mysql is missing.
func requirePHP(t *testing.T) string {
	t.Helper()
	php, err := exec.LookPath("php")
	if err != nil {
		t.Fatalf("the mixed-fleet chaos round needs php (php-cli, php-mysql): run scripts/ensure-php.sh (make test installs it)")
	}
	if out, err := exec.Command(php, "-r", `exit(extension_loaded("pdo_mysql") ? 0 : 1);`).CombinedOutput(); err != nil {
		t.Fatalf("php lacks pdo_mysql (%v %s): run scripts/ensure-php.sh (make test installs it)", err, out)
	}
	return php
}

// Round d: a mixed fleet on one queue. Three PHP processes claiming as the
// plugin's worker does (testdata/php_worker.php) run beside two daemons
// while they drain 3,000 jobs; both sides record their handler runs in
// chaos_runs. Every job must run once and complete once, whoever took it.
func TestChaosMixedFleet(t *testing.T) {
	php := requirePHP(t)
	script, err := filepath.Abs(filepath.Join("testdata", "php_worker.php"))
	require.NoError(t, err)
	dsn := testdb.New(t)
	db := prepare(t, dsn)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	host, port, ok := strings.Cut(cfg.Addr, ":")
	require.True(t, ok, "address %q", cfg.Addr)

	const jobs = 3000
	var total tally
	n := rounds(t, 1)
	for round := 1; round <= n; round++ {
		reset(t, db)
		insertJobs(t, db, jobs)
		f := newFleet(t, dsn)
		var phps []*proc
		for i := range 3 {
			name := fmt.Sprintf("mixed-r%d-php%d", round, i)
			cmd := exec.Command(php, script)
			cmd.Env = append(cmd.Environ(), "CHAOS_HOST="+host, "CHAOS_PORT="+port, "CHAOS_DB="+cfg.DBName,
				"CHAOS_WORKER="+name, "CHAOS_IDLE_EXIT=2")
			p := f.start(name, cmd)
			p.selfExit = true
			phps = append(phps, p)
		}
		for i := range 2 {
			// Fewer slots than the other rounds, so PHP gets its share.
			f.worker(fmt.Sprintf("mixed-r%d-go%d", round, i), dsn, "--concurrency", "4", "--stale-timeout", "30s")
		}
		ok := drain(t, db, f, jobs, 180*time.Second)
		// The PHP workers exit on their own once the queue stays empty.
		for _, p := range phps {
			select {
			case <-p.exited:
				require.NoError(t, p.err, "%s:\n%s", p.name, tail(p.out.String()))
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not exit after the drain:\n%s", p.name, tail(p.out.String()))
			}
		}
		f.stopAll(15 * time.Second)
		if !ok {
			t.Logf("round %d: drain timed out", round)
		}
		var shares []struct {
			Worker string `db:"worker"`
			N      int    `db:"n"`
		}
		require.NoError(t, db.Select(&shares, "SELECT worker, COUNT(*) AS n FROM "+runsTable+" GROUP BY worker ORDER BY worker"))
		var parts []string
		phpRuns := 0
		for _, s := range shares {
			parts = append(parts, fmt.Sprintf("%s=%d", s.Worker, s.N))
			if strings.Contains(s.Worker, "php") {
				phpRuns += s.N
			}
		}
		tl := count(t, db, f.killedNames())
		check(t, fmt.Sprintf("mixed fleet round %d (runs: %s)", round, strings.Join(parts, " ")), tl)
		require.NotZero(t, phpRuns, "the PHP workers ran nothing")
		total.add(tl)
	}
	t.Logf("mixed fleet, %d rounds: %s", n, total)
}
