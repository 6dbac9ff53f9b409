package wpconfig

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

func TestParseFileStock(t *testing.T) {
	t.Parallel()
	s, err := ParseFile(filepath.Join("testdata", "wp-config.php"))
	require.NoError(t, err)

	require.Equal(t, "acme_wp", s.DBName)
	require.Equal(t, "acme_wp_user", s.DBUser)
	require.Equal(t, `c0rr3ct:h0rse@batt/ery's #1`, s.DBPassword)
	require.Equal(t, "db.internal:3307", s.DBHost)
	require.Equal(t, "utf8mb4", s.DBCharset)
	require.Equal(t, "acme_", s.TablePrefix)
	require.Equal(t, ptr("themequeue"), s.QueuetyTablePrefix)

	// Comment and close-tag lookalikes inside the salts are string content.
	require.Equal(t, `{RHtU|VQcD/.M]pg0TM;//#/*?>aEMM1ZA7<;=V0F?h_HVJWDB&t2;h,WdQ/%ZUm`, s.Defines["AUTH_KEY"])
	require.Equal(t, `ZytfqY^6K?<1Qjah4 :dX&):d#3>eO*/ define('DB_NAME','x'); /*2}lny2`, s.Defines["NONCE_SALT"])
	require.Equal(t, "", s.Defines["DB_COLLATE"])
	require.Contains(t, s.Defines, "DB_COLLATE")
	// Non-literal defines are left out: interpolation, concatenation, __DIR__, booleans.
	for _, k := range []string{"WP_HOME", "WP_SITEURL", "ABSPATH", "WP_DEBUG"} {
		require.NotContains(t, s.Defines, k)
	}
	require.Len(t, s.Defines, 15)
}

func TestParseFileMissing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope", "wp-config.php")
	_, err := ParseFile(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "reading wp-config: open "+path+": no such file or directory")
}

func TestParseFileErrorNamesPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(path, []byte("<?php\ndefine('DB_NAME','a');\ndefine('DB_USER','b');\ndefine( 'DB_HOST', getenv( 'DB_HOST' ) );\n"), 0o600))
	_, err := ParseFile(path)
	require.EqualError(t, err, path+":4: DB_HOST is not a string literal (getenv(...)); pass --dsn instead")
}

// base defines the three required constants after whatever the case adds,
// so that (first definition wins) the case's own defines take precedence.
const base = "\ndefine('DB_NAME', 'db');\ndefine('DB_USER', 'user');\ndefine('DB_HOST', 'localhost');\n"

func TestParse(t *testing.T) {
	t.Parallel()
	std := Settings{DBName: "db", DBUser: "user", DBHost: "localhost", TablePrefix: "wp_"}
	with := func(f func(*Settings)) Settings { s := std; f(&s); return s }

	tests := []struct {
		name string
		src  string
		want Settings
	}{
		{"minimal", "<?php" + base, std},
		{"whitespace and double quotes",
			"<?php\n  define (\n\t\"DB_NAME\"  ,\r\n  \"x\"\n)\n;" + base,
			with(func(s *Settings) { s.DBName = "x" })},
		{"case-insensitive and namespaced define, no semicolon before close tag",
			"<?php DEFINE('DB_USER','u1'); \\define('DB_HOST', '10.0.0.5') ?>\n<?php" + base,
			with(func(s *Settings) { s.DBUser, s.DBHost = "u1", "10.0.0.5" })},
		{"double-quoted escapes",
			`<?php define("DB_PASSWORD", "a\\b\"c\n\t\$d\x41\101\u{1F600}\q\'{ $}");` + base,
			with(func(s *Settings) { s.DBPassword = "a\\b\"c\n\t$dAA\U0001F600\\q\\'{ $}" })},
		{"single-quoted escapes",
			`<?php define('DB_PASSWORD', 'it\'s a \\ back\slash \n "$x" {$y}');` + base,
			with(func(s *Settings) { s.DBPassword = `it's a \ back\slash \n "$x" {$y}` })},
		{"empty password", "<?php define('DB_PASSWORD', '');" + base, std},
		{"comments hide defines",
			"<?php\n// define('DB_NAME', 'a');\n# define('DB_NAME', 'b');\n/* define('DB_NAME', 'c');\n define('DB_USER', 'c'); */\n" +
				"/** @see define('DB_HOST', 'd') */ define('DB_NAME', 'real'); #[ define('DB_USER', 'e') ]\n" + base,
			with(func(s *Settings) { s.DBName = "real" })},
		{"line comment ends at close tag",
			"<?php # define('DB_NAME', 'a') ?>define('DB_NAME', 'html')<?php define('DB_NAME', 'b');" + base,
			with(func(s *Settings) { s.DBName = "b" })},
		{"inline HTML before open tag",
			"define('DB_NAME', 'html');\n<?php\n" + base, std},
		{"first definition wins",
			"<?php define('DB_HOST', 'first'); define('DB_HOST', 'second');" + base,
			with(func(s *Settings) { s.DBHost = "first" })},
		{"table prefix spacing and double quotes",
			"<?php $table_prefix  =  \"x_\" ;" + base,
			with(func(s *Settings) { s.TablePrefix = "x_" })},
		{"table prefix last assignment wins, comparisons ignored",
			"<?php $table_prefix = 'a_'; $table_prefix = 'b_'; if ($table_prefix == 'c_') {} $t = $table_prefix;" + base,
			with(func(s *Settings) { s.TablePrefix = "b_" })},
		{"empty queuety prefix is kept",
			"<?php define( 'QUEUETY_TABLE_PREFIX', '' );" + base,
			with(func(s *Settings) { s.QueuetyTablePrefix = ptr("") })},
		{"non-literal optional defines are ignored",
			"<?php define('DB_CHARSET', getenv('CHARSET')); define('WP_DEBUG', true); define('X', 'a' . 'b');" + base,
			std},
		{"strings and heredocs hide defines",
			"<?php $a = \"{$b[\"define('DB_NAME', 'x');\"]} ${c['d']}\"; $h = <<<EOT\ndefine('DB_NAME', 'y');\n  EOT;\n" +
				"$n = <<<'NOW'\ndefine('DB_NAME', 'z');\nNOW;\n$s = `define('DB_NAME', 'w')`;" + base,
			std},
		{"methods and declarations named define are not define()",
			"<?php $o->define('DB_NAME', 'm'); Foo::define('DB_NAME', 's'); function define($a, $b) {}" + base,
			std},
		{"constant name must be a literal",
			"<?php define($name, 'x'); define(NAME, 'y');" + base,
			std},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.src))
			require.NoError(t, err)
			require.NotNil(t, got.Defines)
			got.Defines, got.Constants = nil, nil // TestParseConstants covers them
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, err string
	}{
		{"getenv host",
			"<?php\ndefine('DB_NAME', 'db');\ndefine( 'DB_HOST', getenv( 'WORDPRESS_DB_HOST' ) );" + base,
			"wp-config.php:3: DB_HOST is not a string literal (getenv(...)); pass --dsn instead"},
		{"missing name", "<?php define('DB_USER','u'); define('DB_HOST','h');",
			"wp-config.php: DB_NAME is not defined; pass --dsn instead"},
		{"commented-out user", "<?php define('DB_NAME','n'); // define('DB_USER','u');\ndefine('DB_HOST','h');",
			"wp-config.php: DB_USER is not defined; pass --dsn instead"},
		{"no open tag", "define('DB_NAME','n'); define('DB_USER','u'); define('DB_HOST','h');",
			"wp-config.php: DB_NAME is not defined; pass --dsn instead"},
		{"first definition wins even if non-literal",
			"<?php define('DB_NAME', $_ENV['DB']);" + base,
			"wp-config.php:1: DB_NAME is not a string literal ($_ENV['DB']); pass --dsn instead"},
		{"concatenation", "<?php define('DB_NAME', 'wp' . '_site');" + base,
			"wp-config.php:1: DB_NAME is not a string literal ('wp' . '_site'); pass --dsn instead"},
		{"concatenated user", "<?php define('DB_USER', 'wp' . '_user');" + base,
			"wp-config.php:1: DB_USER is not a string literal (a concatenation); pass --dsn instead"},
		{"constant", "<?php define('DB_HOST', MY_DB_HOST);" + base,
			"wp-config.php:1: DB_HOST is not a string literal (MY_DB_HOST); pass --dsn instead"},
		{"interpolated password", `<?php define("DB_PASSWORD", "pa$secret");` + base,
			`wp-config.php:1: DB_PASSWORD is not a string literal (an interpolated string); pass --dsn instead`},
		{"braced interpolation", `<?php define("DB_HOST", "db.{$env}.internal");` + base,
			`wp-config.php:1: DB_HOST is not a string literal ("db.{$env}.internal": variable interpolation "{$env" is not supported); pass --dsn instead`},
		{"long expression is shortened, call form only for a whole call",
			"<?php define('DB_NAME', isset($x) ? 'a_very_long_database_name' : 'another_one');" + base,
			"wp-config.php:1: DB_NAME is not a string literal (isset($x) ? 'a_very_long_database_nam...); pass --dsn instead"},
		{"long non-call expression is shortened",
			"<?php define('DB_NAME', $cfg['db']['name'] ?? 'a_very_long_database_name_default');" + base,
			"wp-config.php:1: DB_NAME is not a string literal ($cfg['db']['name'] ?? 'a_very_long_da...); pass --dsn instead"},
		{"table prefix from env", "<?php" + base + "\n$table_prefix = getenv('PREFIX') ?: 'wp_';",
			"wp-config.php:6: $table_prefix is not a string literal (getenv('PREFIX') ?: 'wp_')"},
		{"table prefix with bad characters", "<?php" + base + "$table_prefix = 'wp-';",
			`wp-config.php:5: $table_prefix "wp-" can only contain numbers, letters, and underscores`},
		{"non-literal queuety table override", "<?php" + base + "define('QUEUETY_TABLE_JOBS', PREFIX . 'jobs');",
			"wp-config.php:5: QUEUETY_TABLE_JOBS is not a string literal (PREFIX . 'jobs')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.src))
			require.EqualError(t, err, tt.err)
		})
	}
}

// The login's value never appears in an error, whatever construct holds
// it (issue 23, N7): only the constant and the kind of expression.
func TestParseErrorsHideSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, construct string }{
		{`'Hunter2-' . 'TopSecret'`, "a concatenation"},
		{`"Hunter2-$x-TopSecret"`, "an interpolated string"},
		{"<<<EOT\nHunter2-TopSecret\nEOT", "a heredoc"},
		{"<<<'EOT'\nHunter2-TopSecret\nEOT", "a heredoc"},
		{`$secrets['Hunter2-TopSecret'] ?? 'Hunter2'`, "an expression"},
		{`"Hunter2-{$x}-TopSecret"`, "an interpolated string"},
		{"`echo Hunter2-TopSecret`", "a string the literal reader cannot read"},
		{`trim('Hunter2-TopSecret')`, "trim(...)"},
	} {
		for _, name := range []string{"DB_PASSWORD", "DB_USER"} {
			src := "<?php\ndefine('" + name + "', " + tc.expr + ");\n" + base
			_, err := Parse([]byte(src))
			require.EqualError(t, err, "wp-config.php:2: "+name+" is not a string literal ("+tc.construct+"); pass --dsn instead", tc.expr)
			require.NotContains(t, err.Error(), "Hunter2")
			require.NotContains(t, err.Error(), "TopSecret")
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("<?php" + base + "$table_prefix = \"a\\u{41}\";"))
	f.Add([]byte("<?php $a = \"{$b[\"x\"]}\"; $h = <<<EOT\nx\nEOT;\n/* c */ # d\n`e`"))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, _ = Parse(src) // must not panic or hang
	})
}
