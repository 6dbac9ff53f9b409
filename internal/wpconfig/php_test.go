package wpconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func phpBinary(t *testing.T) string {
	t.Helper()
	php, err := exec.LookPath("php")
	require.NoError(t, err, "php-cli is needed (scripts/ensure-php.sh installs it)")
	return php
}

// The official WordPress image's wp-config.php: every value from a
// WORDPRESS_* variable through getenv_docker(), or its *_FILE secret.
func TestLoadDockerImage(t *testing.T) {
	t.Parallel()
	php := phpBinary(t)
	secret := filepath.Join(t.TempDir(), "db_password")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret:from/file\n"), 0o600))
	env := []string{
		"WORDPRESS_DB_HOST=db.internal:3307",
		"WORDPRESS_DB_USER=site",
		"WORDPRESS_DB_PASSWORD_FILE=" + secret,
		"WORDPRESS_DB_NAME=site_db",
		"WORDPRESS_TABLE_PREFIX=dock_",
		"WORDPRESS_CONFIG_EXTRA=define('QUEUETY_STALE_TIMEOUT', 120); define('QUEUETY_RESOURCE_QUEUE_COST_BUDGETS', ['default' => 20, 'llm' => 3]);",
	}
	s, err := Load(context.Background(), filepath.Join("testdata", "docker", "wp-config.php"), Options{PHP: php, Env: env})
	require.NoError(t, err)
	require.Equal(t, ReaderPHP, s.Reader)
	require.Equal(t, "site_db", s.DBName)
	require.Equal(t, "site", s.DBUser)
	require.Equal(t, "s3cret:from/file", s.DBPassword)
	require.Equal(t, "db.internal:3307", s.DBHost)
	require.Equal(t, "utf8", s.DBCharset)
	require.Equal(t, "dock_", s.TablePrefix)
	require.Equal(t, Constant{Kind: ConstInt, Text: "120"}, s.Constants["QUEUETY_STALE_TIMEOUT"])
	require.Equal(t, Constant{Kind: ConstArray, Array: []ArrayEntry{
		{Key: "default", Value: Constant{Kind: ConstInt, Text: "20"}},
		{Key: "llm", Value: Constant{Kind: ConstInt, Text: "3"}},
	}}, s.Constants["QUEUETY_RESOURCE_QUEUE_COST_BUDGETS"])
	require.Equal(t, Constant{Kind: ConstBool, Text: "", Line: 47}, s.Constants["WP_DEBUG"])
	require.NotContains(t, s.Constants, "ABSPATH", "the reader's own ABSPATH is left out")

	// Without the variables, the image's defaults.
	s, err = Load(context.Background(), filepath.Join("testdata", "docker", "wp-config.php"), Options{PHP: php, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "wordpress", s.DBName)
	require.Equal(t, "mysql", s.DBHost)
	require.Equal(t, "wp_", s.TablePrefix)

	// The literal reader cannot read it, and says so without the values.
	_, err = Load(context.Background(), filepath.Join("testdata", "docker", "wp-config.php"), Options{NoPHP: true})
	require.EqualError(t, err, filepath.Join("testdata", "docker", "wp-config.php")+":28: DB_NAME is not a string literal (getenv_docker(...)); pass --dsn instead")
}

// copyTree copies a fixture directory to a temporary one.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

// A Bedrock site: web/wp-config.php loads the site's Composer autoloader
// and config/application.php, which reads .env and stages constants with
// Config::define() until Config::apply().
func TestLoadBedrock(t *testing.T) {
	t.Parallel()
	php := phpBinary(t)
	root := copyTree(t, filepath.Join("testdata", "bedrock"))
	env, err := os.ReadFile(filepath.Join(root, ".env.example"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"),
		[]byte(strings.Replace(string(env), "database_password", `pa"ss word`, 1)), 0o600))

	s, err := Load(context.Background(), filepath.Join(root, "web", "wp-config.php"), Options{PHP: php, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, ReaderPHP, s.Reader)
	require.Equal(t, "database_name", s.DBName)
	require.Equal(t, "database_user", s.DBUser)
	require.Equal(t, `pa"ss word`, s.DBPassword)
	require.Equal(t, "127.0.0.1:3306", s.DBHost)
	require.Equal(t, "utf8mb4", s.DBCharset)
	require.Equal(t, "bed_", s.TablePrefix)
	require.Equal(t, "900", s.Constants["QUEUETY_STALE_TIMEOUT"].Text)
	require.Equal(t, ConstBool, s.Constants["QUEUETY_DEBUG"].Kind, "config/environments/development.php ran")
	require.Equal(t, "http://example.com/wp", s.Defines["WP_SITEURL"])
	require.Equal(t, ptr("queuety_"), s.QueuetyTablePrefix)

	// The process environment beats .env (phpdotenv's immutable loader).
	s, err = Load(context.Background(), filepath.Join(root, "web", "wp-config.php"), Options{PHP: php, Env: []string{"DB_NAME=from_env", "WP_ENV=production"}})
	require.NoError(t, err)
	require.Equal(t, "from_env", s.DBName)
	require.NotContains(t, s.Constants, "QUEUETY_DEBUG")

	// A .env without DB_HOST: Bedrock's default.
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("DB_NAME=a\nDB_USER=b\nDB_PASSWORD=\nWP_HOME=x\nWP_SITEURL=y\n"), 0o600))
	s, err = Load(context.Background(), filepath.Join(root, "web", "wp-config.php"), Options{PHP: php, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "localhost", s.DBHost)
	require.Equal(t, "wp_", s.TablePrefix)

	// Missing .env values: the site's own check fails, and the message says so.
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("WP_HOME=x\nWP_SITEURL=y\n"), 0o600))
	_, err = Load(context.Background(), filepath.Join(root, "web", "wp-config.php"), Options{PHP: php, Env: []string{}})
	require.ErrorContains(t, err, "php stopped: uncaught RuntimeException at "+filepath.Join(root, "vendor", "vlucas", "phpdotenv", "src", "Dotenv.php")+":54 (PHP's message is not shown: it may quote a secret); pass --dsn instead")
}

// A hostile or broken wp-config.php gets a clear error, and a file that
// never finishes is stopped at the timeout.
func TestLoadHostile(t *testing.T) {
	t.Parallel()
	php := phpBinary(t)
	const db = "<?php\ndefine('DB_NAME', 'n'); define('DB_USER', 'u'); define('DB_PASSWORD', 'Hunter2-TopSecret'); define('DB_HOST', 'h');\n"
	for _, tc := range []struct {
		name, src, err string
	}{
		{"prints", db + "echo DB_PASSWORD;\n", "the file printed output when read (17 bytes); a wp-config.php prints nothing; pass --dsn instead"},
		{"prints past the buffer", db + "while (ob_get_level()) ob_end_clean(); echo 'Hunter2-TopSecret';\n", "the file printed output when read (17 bytes)"},
		{"inline HTML", db + "?>\n<p>Hunter2-TopSecret</p>\n", "the file printed output when read"},
		{"exits", db + "exit(0);\n", "the file ended php (exit or die) before it finished; pass --dsn instead"},
		{"dies with a message", db + "die('Hunter2-TopSecret');\n", "the file ended php (exit or die) before it finished"},
		{"fatal error", db + "no_such_function();\n", "php stopped: uncaught Error (Call to undefined function no_such_function()) at "},
		{"exception quoting a secret", db + "throw new RuntimeException('bad value [' . DB_PASSWORD . ']');\n", "php stopped: uncaught RuntimeException at "},
		{"syntax error", db + "define('X', 'Hunter2-TopSecret' 'more');\n", "php stopped: uncaught ParseError at "},
		{"unquoted password", "<?php\ndefine('DB_PASSWORD', Hunter2_TopSecret);\n", "php stopped: uncaught Error at "},
		{"signals", db + "posix_kill(getmypid(), 9);\n", "php stopped: uncaught Error (Call to undefined function posix_kill()) at "},
		{"memory", db + "$a = []; for (;;) { $a[] = str_repeat('x', 1 << 20); }\n", "php stopped: fatal error at "},
		{"loops", db + "while (true) { usleep(1000); }\n", "php did not finish reading the file within 1s (does it loop, sleep or wait on the network?); pass --dsn instead"},
		{"network", db + "fsockopen('127.0.0.1', 3306);\n", "php stopped: uncaught Error (Call to undefined function fsockopen()) at "},
		{"password from a missing variable", "<?php\ndefine('DB_NAME', 'n'); define('DB_USER', 'u'); define('DB_PASSWORD', getenv('NOPE')); define('DB_HOST', 'h');\n",
			"DB_PASSWORD is a boolean when the file is run, not a string (an environment variable not set?); pass --dsn instead"},
		{"no DB_HOST", "<?php\ndefine('DB_NAME', 'n'); define('DB_USER', 'u');\n", "DB_HOST is not defined when the file is run; pass --dsn instead"},
		{"bad prefix", db + "$table_prefix = 'wp-' . 'x';\n", `$table_prefix "wp-x" can only contain numbers, letters, and underscores`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "wp-config.php")
			require.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
			start := time.Now()
			_, err := Load(context.Background(), path, Options{PHP: php, Timeout: time.Second, Env: []string{}})
			require.ErrorContains(t, err, path+": "+tc.err)
			require.NotContains(t, err.Error(), "Hunter2")
			require.NotContains(t, err.Error(), "TopSecret")
			require.Less(t, time.Since(start), 30*time.Second, "never hangs")
		})
	}
}

// --dsn beside --wp-config: the DB_* constants are not needed.
func TestLoadHaveDSN(t *testing.T) {
	t.Parallel()
	php := phpBinary(t)
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte("<?php\ndefine('DB_PASSWORD', getenv('NOPE') . 'x' . 'Hunter2');\ndefine('QUEUETY_STALE_TIMEOUT', 42);\n$table_prefix = 'site_';\n"), 0o600))
	for _, opts := range []Options{{PHP: php, HaveDSN: true, Env: []string{}}, {NoPHP: true, HaveDSN: true}} {
		s, err := Load(context.Background(), path, opts)
		require.NoError(t, err)
		require.Equal(t, "42", s.Constants["QUEUETY_STALE_TIMEOUT"].Text)
		require.Equal(t, "site_", s.TablePrefix)
	}
	_, err := Load(context.Background(), path, Options{NoPHP: true})
	require.EqualError(t, err, path+": DB_NAME is not defined; pass --dsn instead")
}

// Without php the literal reader reads a literal file, and says so.
func TestLoadLiteralFallback(t *testing.T) {
	t.Parallel()
	s, err := Load(context.Background(), filepath.Join("testdata", "wp-config.php"), Options{NoPHP: true})
	require.NoError(t, err)
	require.Equal(t, ReaderLiteral, s.Reader)
	require.Equal(t, "acme_wp", s.DBName)

	// The same file read by php gives the same settings.
	p, err := Load(context.Background(), filepath.Join("testdata", "wp-config.php"), Options{PHP: phpBinary(t), Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, ReaderPHP, p.Reader)
	require.Equal(t, s.DBName, p.DBName)
	require.Equal(t, s.DBUser, p.DBUser)
	require.Equal(t, s.DBPassword, p.DBPassword)
	require.Equal(t, s.DBHost, p.DBHost)
	require.Equal(t, s.TablePrefix, p.TablePrefix)
	require.Equal(t, s.QueuetyTablePrefix, p.QueuetyTablePrefix)
	for k, v := range s.Defines {
		require.Equal(t, v, p.Defines[k], k)
	}
}

// WordPress never loads: the require of wp-settings.php at the end of the
// file gets the reader's empty one, whether the file defines ABSPATH
// behind the usual defined() check or unconditionally (older files).
func TestLoadStopsBeforeWordPress(t *testing.T) {
	t.Parallel()
	php := phpBinary(t)
	for _, abspath := range []string{
		"if ( ! defined( 'ABSPATH' ) ) { define( 'ABSPATH', __DIR__ . '/' ); }",
		"define('ABSPATH', dirname(__FILE__) . '/');",
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "wp-settings.php"), []byte("<?php define('WORDPRESS_LOADED', true); echo 'site';"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "wp-config.php"), []byte("<?php"+base+abspath+"\nrequire_once ABSPATH . 'wp-settings.php';\n"), 0o600))
		s, err := Load(context.Background(), filepath.Join(dir, "wp-config.php"), Options{PHP: php, Env: []string{}})
		require.NoError(t, err, abspath)
		require.Equal(t, "db", s.DBName)
		require.NotContains(t, s.Constants, "WORDPRESS_LOADED", abspath)
	}
}

// What real sites have and WordPress tolerates is not "output": a UTF-8
// byte-order mark before <?php and blank lines after a closing ?>.
func TestLoadToleratesBOMAndTrailingBlankLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte("\xEF\xBB\xBF<?php"+base+"?>\n\n  \n"), 0o600))
	s, err := Load(context.Background(), path, Options{PHP: phpBinary(t), Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "db", s.DBName)
}

// A php that is not php-cli (or dies before the reader runs) gives no
// result: an error naming it, without what it wrote to stderr.
func TestLoadBrokenPHP(t *testing.T) {
	t.Parallel()
	fake := filepath.Join(t.TempDir(), "php")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho Hunter2-TopSecret >&2\nexit 3\n"), 0o755))
	path := filepath.Join("testdata", "wp-config.php")
	_, err := Load(context.Background(), path, Options{PHP: fake})
	require.EqualError(t, err, path+": php ("+fake+") gave no result (exit status 3; is it php-cli 8?); pass --dsn instead")
}
