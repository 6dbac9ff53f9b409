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

// The fixtures of the wp-config.php layouts php reads (internal/wpconfig).
var wpFixtures = filepath.Join("..", "..", "internal", "wpconfig", "testdata")

// `migrate --wp-config` on the official WordPress image's wp-config.php,
// with the WORDPRESS_* variables the image's users set. t.Setenv forbids
// t.Parallel.
func TestMigrateWPConfigDockerImage(t *testing.T) {
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	t.Setenv("WORDPRESS_DB_HOST", cfg.Addr)
	t.Setenv("WORDPRESS_DB_USER", cfg.User)
	t.Setenv("WORDPRESS_DB_PASSWORD", cfg.Passwd)
	t.Setenv("WORDPRESS_DB_NAME", cfg.DBName)
	t.Setenv("WORDPRESS_TABLE_PREFIX", "dock_")
	t.Setenv("WORDPRESS_CONFIG_EXTRA", "define('QUEUETY_TABLE_PREFIX', 'q');")
	path := filepath.Join(wpFixtures, "docker", "wp-config.php")

	r := runOK(t, "--wp-config", path, "--log-level", "debug", "migrate")
	require.Contains(t, r.stdout, "created table dock_q_jobs\n")
	require.True(t, tableExists(t, dsn, "dock_q_jobs"))
	require.Contains(t, r.stderr, `msg="wp-config read" path=`+path+` reader=php`)
	require.Equal(t, "Dispatched job #1\n", runOK(t, "--wp-config", path, "dispatch", "queuety.noop").stdout)
}

// `migrate --wp-config` on a Bedrock site: web/wp-config.php, with the
// settings in config/application.php and .env.
func TestMigrateWPConfigBedrock(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join(wpFixtures, "bedrock"))))
	env, err := os.ReadFile(filepath.Join(root, ".env.example"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte(strings.NewReplacer(
		"'database_name'", "'"+cfg.DBName+"'",
		"'database_user'", "'"+cfg.User+"'",
		"'database_password'", "'"+cfg.Passwd+"'",
		"'127.0.0.1:3306'", "'"+cfg.Addr+"'",
	).Replace(string(env))), 0o600))
	path := filepath.Join(root, "web", "wp-config.php")

	r := runOK(t, "--wp-config", path, "migrate")
	require.Contains(t, r.stdout, "created table bed_queuety_jobs\n")
	require.True(t, tableExists(t, dsn, "bed_queuety_jobs"))

	// The site's QUEUETY_STALE_TIMEOUT (900 s, from .env) applies.
	runOK(t, "--wp-config", path, "dispatch", "php_export")
	exec1(t, openDB(t, dsn), "UPDATE bed_queuety_jobs SET status = 'processing', reserved_at = NOW() - INTERVAL 12 MINUTE")
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", runOK(t, "--wp-config", path, "recover").stdout)
	exec1(t, openDB(t, dsn), "UPDATE bed_queuety_jobs SET reserved_at = NOW() - INTERVAL 16 MINUTE")
	require.Equal(t, "Recovered 1 stale jobs (1 retried, 0 buried).\n", runOK(t, "--wp-config", path, "recover").stdout)
}

// `migrate --wp-config` on hostile files: a usage error that says what
// the file did, no secret, and nothing created.
func TestMigrateWPConfigHostile(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	php := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace
	db := "<?php\ndefine('DB_NAME', '" + php(cfg.DBName) + "'); define('DB_USER', '" + php(cfg.User) + "');\n" +
		"define('DB_PASSWORD', '" + php(cfg.Passwd) + "' . 'Hunter2'); define('DB_HOST', '" + php(cfg.Addr) + "');\n"
	for _, tc := range []struct{ name, src, want string }{
		{"prints", db + "echo DB_PASSWORD;\n", "the file printed output when read"},
		{"exits", db + "exit;\n", "the file ended php (exit or die) before it finished"},
		// The loop is cut at wpconfig.DefaultTimeout (5 s).
		{"loops", db + "for (;;) { usleep(10000); }\n", "php did not finish reading the file within 5s"},
	} {
		path := filepath.Join(t.TempDir(), "wp-config.php")
		require.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
		r := run(t, "--wp-config", path, "migrate")
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, "--wp-config: "+path+": "+tc.want, tc.name)
		require.NotContains(t, r.stderr, "Hunter2", tc.name)
		require.Empty(t, r.stdout, tc.name)
		require.False(t, tableExists(t, dsn, "wp_queuety_jobs"), tc.name)
	}
}

// Without php the literal reader reads wp-config.php, says so, and names
// the limit when a value is computed. t.Setenv forbids t.Parallel.
func TestWPConfigWithoutPHP(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "")
	r := runOK(t, "--wp-config", path, "--log-level", "debug", "migrate")
	require.Contains(t, r.stdout, "created table wpt_queuety_jobs\n")
	require.Contains(t, r.stderr, `msg="wp-config read" path=`+path+` reader=literal`)

	computed := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(computed, []byte("<?php\ndefine('DB_NAME', 'db');\ndefine('DB_USER', 'root');\ndefine('DB_PASSWORD', 'Hunter2' . getenv('X'));\ndefine('DB_HOST', 'localhost');\n"), 0o600))
	r = run(t, "--wp-config", computed, "migrate")
	require.Equal(t, cli.ExitUsage, r.code, r.String())
	require.Contains(t, r.stderr, computed+":4: DB_PASSWORD is not a string literal (a concatenation); pass --dsn instead (no php on the PATH: only literal define()s can be read)")
	require.NotContains(t, r.stderr, "Hunter2")
}
