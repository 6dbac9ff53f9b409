package phppool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		`php php-bridge/bin/queuety-php-worker --bootstrap app.php`: {"php", "php-bridge/bin/queuety-php-worker", "--bootstrap", "app.php"},
		"  php\t-d memory_limit=256M  w.php ":                       {"php", "-d", "memory_limit=256M", "w.php"},
		`php w --bootstrap "/srv/my app/app.php"`:                   {"php", "w", "--bootstrap", "/srv/my app/app.php"},
		`php w --bootstrap '/srv/it''s/app.php'`:                    {"php", "w", "--bootstrap", "/srv/its/app.php"},
		`php w --bootstrap '/srv/$HOME "x"/a.php'`:                  {"php", "w", "--bootstrap", `/srv/$HOME "x"/a.php`},
		`php w --bootstrap /srv/my\ app/a.php`:                      {"php", "w", "--bootstrap", "/srv/my app/a.php"},
		`php "a\"b" "c\d" "e\\f" ""`:                                {"php", `a"b`, `c\d`, `e\f`, ""},
		`php a"b c"d`:                                               {"php", "ab cd"},
		"php a\\\nb":                                                {"php", "ab"},
		// Bytes that are not UTF-8 are kept, not replaced by U+FFFD.
		"php /srv/\xff\xfe/app.php 'caf\xe9' \"\\\xe9\"": {"php", "/srv/\xff\xfe/app.php", "caf\xe9", "\\\xe9"},
	} {
		got, err := SplitCommand(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, msg := range map[string]string{
		`php 'oops`: "unterminated ' quote",
		`php "oops`: `unterminated " quote`,
		`php oops\`: "trailing backslash",
		"   ":       "empty command",
		``:          "empty command",
	} {
		_, err := SplitCommand(in)
		require.ErrorContains(t, err, msg, in)
	}
}
