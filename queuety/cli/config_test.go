package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// writeWPConfig fills testdata/wp-config.php with the test database's
// settings and writes it to a temporary directory. extra replaces the
// __EXTRA__ comment (more define()s).
func writeWPConfig(t *testing.T, dsn, extra string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join("testdata", "wp-config.php"))
	require.NoError(t, err)
	php := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace // single-quoted PHP string
	out := strings.NewReplacer(
		"__DB_NAME__", php(cfg.DBName),
		"__DB_USER__", php(cfg.User),
		"__DB_PASSWORD__", php(cfg.Passwd),
		"__DB_HOST__", php(cfg.Addr),
		"/* __EXTRA__ */", extra,
	).Replace(string(src))
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte(out), 0o600))
	return path
}

func tableExists(t *testing.T, dsn, name string) bool {
	t.Helper()
	return count(t, openDB(t, dsn),
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name) == 1
}

func TestWPConfig(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "")

	r := runOK(t, "--wp-config", path, "migrate")
	require.Contains(t, r.stdout, "created table wpt_queuety_jobs\n")
	require.Contains(t, r.stdout, "added column wpt_queuety_jobs.reserved_by\n")
	require.True(t, tableExists(t, dsn, "wpt_queuety_jobs"))
	require.False(t, tableExists(t, dsn, "wp_queuety_jobs"))
	require.Equal(t, "Schema up to date.\n", runOK(t, "--wp-config", path, "migrate").stdout)

	r = runOK(t, "--wp-config", path, "dispatch", "--payload", `{"via":"wp-config"}`, "queuety.noop")
	require.Equal(t, "Dispatched job #1\n", r.stdout)
	require.Equal(t, 1, count(t, openDB(t, dsn), "SELECT COUNT(*) FROM `wpt_queuety_jobs` WHERE payload = ?", `{"via":"wp-config"}`))
	require.Contains(t, runOK(t, "--wp-config", path, "status").stdout, "default")

	// --prefix beats wp-config's $table_prefix.
	r = runOK(t, "--wp-config", path, "--prefix", "alt_", "migrate")
	require.Contains(t, r.stdout, "created table alt_queuety_jobs\n")

	// --dsn beside --wp-config: a file that --wp-config names must exist.
	r = run(t, "--dsn", dsn, "--wp-config", filepath.Join(t.TempDir(), "missing.php"), "migrate")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "missing.php")
}

// --dsn beside --wp-config: the database from --dsn, the table prefix and
// every QUEUETY_* setting from the file, whose DB_* are then not needed.
func TestWPConfigWithDSN(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte(`<?php
define( 'DB_NAME', 'somewhere_else' );
define( 'DB_PASSWORD', 'Hunter2-' . getenv( 'NOPE' ) );
define( 'QUEUETY_TABLE_PREFIX', 'themequeue' );
define( 'QUEUETY_STALE_TIMEOUT', 3600 );
$table_prefix = 'site_';
`), 0o600))
	r := runOK(t, "--dsn", dsn, "--wp-config", path, "migrate")
	require.Contains(t, r.stdout, "created table site_themequeue_jobs\n")
	require.True(t, tableExists(t, dsn, "site_themequeue_jobs"))

	runOK(t, "--dsn", dsn, "--wp-config", path, "dispatch", "php_export")
	exec1(t, openDB(t, dsn), "UPDATE site_themequeue_jobs SET status = 'processing', reserved_at = NOW() - INTERVAL 20 MINUTE")
	r = runOK(t, "--dsn", dsn, "--wp-config", path, "recover")
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout, "the site's QUEUETY_STALE_TIMEOUT (1 h) applies with --dsn")
}

// QUEUETY_TABLE_PREFIX and QUEUETY_TABLE_<NAME> defines in wp-config choose
// the table names (spec §1.1); --table-prefix beats the define.
func TestWPConfigQueuetyTableDefines(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "define( 'QUEUETY_TABLE_PREFIX', 'themequeue' );\ndefine( 'QUEUETY_TABLE_LOGS', 'joblog' );")

	r := runOK(t, "--wp-config", path, "migrate")
	require.Contains(t, r.stdout, "created table wpt_themequeue_jobs\n")
	require.Contains(t, r.stdout, "created table wpt_joblog\n")
	require.NotContains(t, r.stdout, "wpt_themequeue_logs")

	r = runOK(t, "--wp-config", path, "--table-prefix", "other", "migrate")
	require.Contains(t, r.stdout, "created table wpt_other_jobs\n")
	require.NotContains(t, r.stdout, "wpt_joblog", "the per-table define still applies")
}

func TestWPConfigErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nowhere", "wp-config.php")
	r := run(t, "--wp-config", missing, "status")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, missing)
	require.Contains(t, r.stderr, "--wp-config")

	// A DB_NAME computed at run time cannot be read statically.
	computed := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(computed, []byte("<?php\ndefine('DB_NAME', getenv('DB'));\ndefine('DB_USER', 'root');\ndefine('DB_HOST', 'localhost');\n"), 0o600))
	r = run(t, "--wp-config", computed, "migrate")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, computed)
	require.Contains(t, r.stderr, "DB_NAME")
}

// --table-prefix has QUEUETY_TABLE_PREFIX's semantics: trimmed, trailing
// underscores folded into one, blank means none; --prefix is $table_prefix.
func TestTablePrefixFlags(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	db := openDB(t, dsn)

	r := runOK(t, on(dsn, "--table-prefix", "themequeue", "migrate")...)
	require.Contains(t, r.stdout, "created table wp_themequeue_jobs\n")
	require.Contains(t, r.stdout, "created table wp_themequeue_logs\n")
	require.Equal(t, "Schema up to date.\n", runOK(t, on(dsn, "--table-prefix", "themequeue_", "migrate")...).stdout)
	require.Equal(t, "Schema up to date.\n", runOK(t, on(dsn, "--table-prefix", " themequeue__ ", "migrate")...).stdout)

	require.False(t, tableExists(t, dsn, "wp_queuety_jobs"))
	r = runOK(t, on(dsn, "--table-prefix", "themequeue", "dispatch", "--payload", `{"n":2}`, "queuety.noop")...)
	require.Equal(t, "Dispatched job #1\n", r.stdout)
	require.Equal(t, `{"n":2}`, func() string {
		var p string
		require.NoError(t, db.Get(&p, "SELECT payload FROM `wp_themequeue_jobs` WHERE id = 1"))
		return p
	}())

	require.Contains(t, runOK(t, on(dsn, "--table-prefix", "  ", "migrate")...).stdout, "created table wp_jobs\n")
	require.Contains(t, runOK(t, on(dsn, "--prefix", "site2_", "migrate")...).stdout, "created table site2_queuety_jobs\n")
	require.Contains(t, runOK(t, on(dsn, "--prefix", "x_", "--table-prefix", "tq", "migrate")...).stdout, "created table x_tq_jobs\n")

	r = run(t, on(dsn, "--prefix", "bad-prefix", "status")...)
	require.NotEqual(t, cli.ExitOK, r.code, r.String())
	require.Contains(t, r.stderr, "bad-prefix")
}

func TestBadDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dsn, want string
	}{
		{"not a dsn", "invalid DSN"},
		{"root:s3cret@tcp(127.0.0.1:1)/x", "cannot reach MySQL"},
		{strings.TrimSuffix(testdb.ServerDSN(), "/") + "/qt_no_such_database_here", "qt_no_such_database_here"},
	} {
		r := run(t, "--dsn", tc.dsn, "status")
		require.NotEqual(t, cli.ExitOK, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
		require.NotContains(t, r.stderr, "s3cret", "the password is not printed")
		require.Empty(t, r.stdout)
	}
}

// QUEUETY_DSN and the other QUEUETY_* variables configure the app like
// their flags. t.Setenv forbids t.Parallel.
func TestEnvironment(t *testing.T) {
	dsn := testdb.New(t)
	t.Setenv("QUEUETY_DSN", dsn)
	t.Setenv("QUEUETY_TABLE_PREFIX", "envq")
	t.Setenv("QUEUETY_TABLE_LOGS", "envlogs")

	r := runOK(t, "migrate")
	require.Contains(t, r.stdout, "created table wp_envq_jobs\n")
	require.Contains(t, r.stdout, "created table wp_envlogs\n")
	require.True(t, tableExists(t, dsn, "wp_envq_jobs"))
	runOK(t, "dispatch", "--payload", `{"env":true}`, "queuety.noop")
	require.Equal(t, 1, count(t, openDB(t, dsn), "SELECT COUNT(*) FROM `wp_envq_jobs`"))

	// --dsn beats QUEUETY_DSN.
	other := testdb.New(t)
	runOK(t, "--dsn", other, "migrate")
	require.True(t, tableExists(t, other, "wp_envq_jobs"))

	// Neither --dsn, QUEUETY_DSN nor --wp-config: a message saying so.
	t.Setenv("QUEUETY_DSN", "")
	require.NoError(t, os.Unsetenv("QUEUETY_DSN"))
	t.Setenv("QUEUETY_WP_CONFIG", "")
	require.NoError(t, os.Unsetenv("QUEUETY_WP_CONFIG"))
	r = run(t, "status")
	require.NotEqual(t, cli.ExitOK, r.code, r.String())
	require.Contains(t, r.stderr, "--dsn", r.String())
	require.Contains(t, r.stderr, "--wp-config", r.String())

	// QUEUETY_CONCURRENCY is validated like --concurrency.
	t.Setenv("QUEUETY_CONCURRENCY", "0")
	r = run(t, "--dsn", dsn, "work")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, "--concurrency")
}
