package cli_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// noJSON are the commands that print no result a script could read, with
// why: every other command takes --json.
var noJSON = map[string]string{
	"dev":        "an interactive demo: a dashboard and a log, until Ctrl-C",
	"serve":      "a daemon: its output is its log (--log-format json)",
	"completion": "prints a shell script",
}

// Every command that prints takes --json: the test walks the whole
// command tree (the plugin's aliases too), so a new command without it
// fails here.
func TestEveryPrintingCommandHasJSON(t *testing.T) {
	t.Parallel()
	app := cli.New(cli.Options{})
	seen := map[string]bool{}
	var walk func(prefix string, cmds []*ucli.Command)
	walk = func(prefix string, cmds []*ucli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			if len(c.Subcommands) > 0 {
				walk(name, c.Subcommands)
				continue
			}
			seen[name] = true
			if _, ok := noJSON[name]; ok {
				continue
			}
			has := slices.ContainsFunc(c.Flags, func(f ucli.Flag) bool { return slices.Contains(f.Names(), "json") })
			require.True(t, has, "queuety %s prints but has no --json", name)
		}
	}
	walk("", app.Commands)
	require.Greater(t, len(seen), 50)
	for name := range noJSON {
		require.True(t, seen[name], "the exemption of %q names no command", name)
	}
}

// pause, resume, job retry, job bury, job delete and health print JSON
// with --json.
func TestAdminCommandsPrintJSON(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	id := itoa(dispatch(t, dsn, "queuety.noop").ID)

	var paused struct {
		Queue  string `json:"queue"`
		Paused bool   `json:"paused"`
	}
	decodeJSON(t, runOK(t, on(dsn, "pause", "--json", "mail")...), &paused)
	require.Equal(t, "mail", paused.Queue)
	require.True(t, paused.Paused)
	decodeJSON(t, runOK(t, on(dsn, "resume", "mail", "--json")...), &paused)
	require.False(t, paused.Paused)

	var act struct {
		ID     int64  `json:"id"`
		Action string `json:"action"`
		DryRun bool   `json:"dry_run"`
	}
	decodeJSON(t, runOK(t, on(dsn, "job", "bury", "--json", id)...), &act)
	require.Equal(t, "buried", act.Action)
	require.Equal(t, id, itoa(act.ID))
	decodeJSON(t, runOK(t, on(dsn, "job", "retry", "--json", id)...), &act)
	require.Equal(t, "retried", act.Action)
	decodeJSON(t, runOK(t, on(dsn, "retry", id, "--json")...), &act)
	require.Equal(t, "retried", act.Action, "the plugin's alias too")
	decodeJSON(t, runOK(t, on(dsn, "job", "delete", "--dry-run", "--json", id)...), &act)
	require.Equal(t, "deleted", act.Action)
	require.True(t, act.DryRun)
	act.DryRun = false
	decodeJSON(t, runOK(t, on(dsn, "job", "delete", "--yes", "--json", id)...), &act)
	require.Equal(t, "deleted", act.Action)
	require.False(t, act.DryRun)
	require.Equal(t, cli.ExitNotFound, run(t, on(dsn, "job", "inspect", id)...).code, "deleted")

	var health struct {
		Ready bool   `json:"ready"`
		Error string `json:"error"`
	}
	decodeJSON(t, runOK(t, on(dsn, "health", "--json")...), &health)
	require.True(t, health.Ready)
	r := run(t, on(testdb.New(t), "health", "--json")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	decodeJSON(t, r, &health)
	require.False(t, health.Ready)
	require.Contains(t, health.Error, "queuety migrate")
}

// A flag whose definition names no variable gets QUEUETY_ and its name:
// --max-claim-batch (asked for in the review) is read from
// QUEUETY_MAX_CLAIM_BATCH.
func TestDerivedFlagVariableApplies(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(stockBinary(t), "work", "--dsn", testdb.New(t))
	cmd.Env = append(os.Environ(), "QUEUETY_MAX_CLAIM_BATCH=20000")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	require.Equal(t, cli.ExitUsage, ee.ExitCode(), string(out))
	require.Contains(t, string(out), "--max-claim-batch 20000: must be between 1 and 10000")
}
