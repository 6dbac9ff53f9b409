package cli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety/cli"
	store "github.com/queuety-go/queuety/sql"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	r := runOK(t, "--help")
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"USAGE:", "COMMANDS:", "GLOBAL OPTIONS:",
		// examples
		"queuety migrate --dsn 'root@tcp(127.0.0.1:3306)/site'",
		"queuety work --queue critical,default --concurrency 50",
		"queuety dispatch queuety.noop --payload '{\"n\":1}'",
		"queuety status --json",
		// every command and the environment variables
		"work", "dev", "migrate", "dispatch", "recover", "pause", "resume", "status", "job", "purge", "bench",
		"[$QUEUETY_DSN]", "[$QUEUETY_WP_CONFIG]", "[$QUEUETY_TABLE_PREFIX]",
	} {
		require.Contains(t, r.stdout, want)
	}
	require.Equal(t, r.stdout, runOK(t, "-h").stdout)
	require.Equal(t, r.stdout, runOK(t).stdout, "no command prints the help")

	r = runOK(t, "work", "--help")
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"queuety work - claim and run jobs until SIGTERM",
		"queuety work --queue critical,default --concurrency 50",
		"queuety work --wp-config /var/www/html/wp-config.php --stale-timeout 10m",
		"SIGTERM", "--concurrency", "--shutdown-grace", "[$QUEUETY_CONCURRENCY]",
	} {
		require.Contains(t, r.stdout, want)
	}

	for _, tc := range []struct {
		args []string
		want string // an example from the command's description
	}{
		{[]string{"dispatch", "--help"}, "queuety dispatch 'App\\Jobs\\SendEmail' --payload"},
		{[]string{"migrate", "--help"}, "queuety migrate --wp-config /var/www/html/wp-config.php"},
		{[]string{"recover", "--help"}, "*/5 * * * * queuety recover"},
		{[]string{"dev", "--help"}, "dispatch queuety.sleep --payload '{\"ms\":200}'"},
		{[]string{"job", "list", "--help"}, "queuety job list --status buried --queue default --limit 20"},
		{[]string{"bench", "jobs", "--help"}, "queuety bench jobs --rate 200 --duration 10s"},
		{[]string{"job", "--help"}, "retry-buried"},
	} {
		r := runOK(t, tc.args...)
		require.Contains(t, r.stdout, tc.want, r.String())
	}
}

// Usage errors exit 2 wherever they happen. Today an unknown or malformed
// flag after a command name exits 1 (the command-level usage error does not
// go through App.OnUsageError), prints "Incorrect Usage" and the whole help
// to stdout, and an unknown command exits 1.
func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, args := range [][]string{
		{"--bogus", "status"},      // global: exit 2 today
		{"status", "--bogus"},      // command
		{"job", "list", "--bogus"}, // subcommand
		{"job", "list", "--limit", "many"},
		{"job", "inspect", "-1"},
		{"work", "--concurrency", "lots"},
		{"work", "--for-each-page", "0"},
		{"purge", "--older-than", "a week"},
		{"no-such-command"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := run(t, on(dsn, args...)...)
			require.Equal(t, cli.ExitUsage, r.code, r.String())
			require.NotContains(t, r.stdout, "USAGE:", "a usage error is reported on stderr: %s", r.String())
		})
	}
}

// The help documents global flags after the command (`queuety migrate --dsn
// ...`, `queuety work --wp-config ...`, `queuety recover --wp-config ...`),
// but urfave/cli v2 only accepts them before it: today these fail with
// "flag provided but not defined: -dsn".
func TestGlobalFlagsAfterCommand(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	path := writeWPConfig(t, dsn, "")
	runOK(t, "--wp-config", path, "migrate")
	for _, args := range [][]string{
		{"migrate", "--dsn", dsn},
		{"status", "--dsn", dsn, "--json"},
		{"recover", "--wp-config", path},
		{"job", "list", "--dsn", dsn},
		{"dispatch", "--dsn", dsn, "--payload", `{"n":1}`, "queuety.noop"},
		{"bench", "jobs", "--count", "10", "--dsn", dsn},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			r := run(t, args...)
			require.Equal(t, cli.ExitOK, r.code, r.String())
		})
	}
}

// example is a line of a command's help that runs queuety, indented as
// the descriptions indent their examples.
var example = regexp.MustCompile(`(?m)^   .*\bqueuety [a-z]`)

// placeholder is a backticked word in a flag usage: urfave/cli shows it
// as the flag's value placeholder, so it must be one word (not a command).
var placeholder = regexp.MustCompile("`([^`]*)`")

// Every command that runs something has an example in its help, and every
// flag says what it is for, once: no blank usage, no "(default: ...)"
// typed into a usage next to the one urfave/cli adds, and no backticked
// phrase that would turn into a nonsense placeholder.
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	var walk func(path string, cmds []*ucli.Command)
	walk = func(path string, cmds []*ucli.Command) {
		for _, cmd := range cmds {
			name := strings.TrimSpace(path + " " + cmd.Name)
			if cmd.Action != nil {
				assert.Regexp(t, example, cmd.Description, "queuety %s --help has no example", name)
			}
			checkFlags(t, name, cmd.Flags)
			walk(name, cmd.Subcommands)
		}
	}
	app := cli.New(cli.Options{})
	checkFlags(t, "(global)", app.Flags)
	walk("", app.Commands)
}

func checkFlags(t *testing.T, cmd string, flags []ucli.Flag) {
	t.Helper()
	for _, f := range flags {
		df, ok := f.(ucli.DocGenerationFlag)
		require.True(t, ok, "%s: %T", cmd, f)
		usage := df.GetUsage()
		name := "--" + f.Names()[0]
		assert.NotEmpty(t, strings.TrimSpace(usage), "queuety %s %s has a blank usage", cmd, name)
		assert.NotContains(t, usage, "(default", "queuety %s %s: the default goes in Value or DefaultText, or it is printed twice", cmd, name)
		for _, m := range placeholder.FindAllStringSubmatch(usage, -1) {
			assert.NotContains(t, m[1], " ", "queuety %s %s: backticked %q becomes the value placeholder", cmd, name, m[1])
		}
	}
}

// The help of migrate counts the tables it creates.
func TestMigrateHelpCountsTables(t *testing.T) {
	t.Parallel()
	for _, cmd := range cli.New(cli.Options{}).Commands {
		if cmd.Name == "migrate" {
			plugin, own := len(store.TableSuffixes()), len(store.OwnTableSuffixes())
			require.Contains(t, cmd.Description, fmt.Sprintf("Creates the tables that are missing: the %d of\nthe Queuety plugin", plugin))
			require.Contains(t, cmd.Description, fmt.Sprintf("and the %d of queuety-go's own", own))
		}
	}
}
