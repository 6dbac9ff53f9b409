package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// N20: a JSON flag value nested 10,000 deep (80 KB) is refused with exit
// 2 and a short message: its start, its size and the decoder's reason,
// never the whole argument. The checks come before any connection.
func TestDeepJSONFlagIsNotEchoed(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	def := filepath.Join(t.TempDir(), "wf.json")
	require.NoError(t, os.WriteFile(def, []byte(`{"name":"x","steps":[{"type":"single","class":"A"}]}`), 0o600))
	for _, args := range [][]string{
		{"workflow", "signal", "1", "approval", "--payload", deep},
		{"workflow", "dispatch", def, "--state", deep},
		{"dispatch", "h", "--payload", deep},
	} {
		r := run(t, append([]string{"--dsn", "root@tcp(127.0.0.1:1)/none"}, args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%s: %.2000s", args[:2], r.String())
		require.Less(t, len(r.stderr), 1000, "%s: %.2000s", args[:2], r.stderr)
		require.NotContains(t, r.stderr, strings.Repeat(`{"a":`, 100), args[:2])
	}
	r := run(t, "workflow", "signal", "1", "approval", "--payload", deep)
	require.Contains(t, r.stderr, "(60001 bytes)", "the size of what was cut")
}

// N14/N18 on the command line: a 300-character signal or queue name is
// a usage error (exit 2) naming the rule, before any connection; so is a
// control character.
func TestLongSignalNameIsUsageError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 300)
	for _, args := range [][]string{
		{"workflow", "signal", "1", long},
		{"workflow", "approve", "1", "--signal", long},
		{"workflow", "signal", "1", "go\x1b[2J"},
		{"pause", strings.Repeat("s", 300)},
		{"resume", "nul\x00q"},
	} {
		r := run(t, append([]string{"--dsn", "root@tcp(127.0.0.1:1)/none"}, args...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Regexp(t, "longer than (255|64) characters|control character", r.stderr)
		require.NotContains(t, r.stderr, strings.Repeat("s", 100), "a prefix only")
	}
}
