package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// readmeCommands gives the command lines in the README's code blocks
// (fenced, or indented by four spaces or more): those that start with
// queuety or make.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var out []string
	fenced := false
	for _, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && !strings.HasPrefix(line, "    ") {
			continue
		}
		if strings.HasPrefix(trimmed, "queuety ") || strings.HasPrefix(trimmed, "make ") {
			out = append(out, trimmed)
		}
	}
	return out
}

// parses runs line through the command line's parser with every action
// replaced: the command must exist and take every flag given. It returns
// the command's full name.
func parses(t *testing.T, line string) (string, error) {
	t.Helper()
	args, err := phppool.SplitCommand(line)
	require.NoError(t, err, line)
	var out bytes.Buffer
	app := New(Options{Stdout: &out, Stderr: &out})
	ran := ""
	var stub func([]*ucli.Command)
	stub = func(cmds []*ucli.Command) {
		for _, c := range cmds {
			c.Before, c.After = nil, nil
			c.Action = func(c *ucli.Context) error { ran = c.Command.FullName(); return nil }
			stub(c.Subcommands)
		}
	}
	stub(app.Commands)
	app.Before, app.After = nil, nil
	app.Action = func(c *ucli.Context) error { ran = ""; return nil }
	err = app.Run(normalizeArgs(app, args))
	return ran, err
}

var makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9_-]*):`)

// Every queuety line of the README names a command that exists with flags
// it takes, and every make line a target of the Makefile.
func TestReadmeCommandsParse(t *testing.T) {
	t.Parallel()
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	lines := readmeCommands(t)
	require.GreaterOrEqual(t, len(lines), 5, "the README's commands were found")
	var makes []string
	for _, line := range lines {
		if target, ok := strings.CutPrefix(line, "make "); ok {
			require.True(t, targets[target], "README: %q: no such Makefile target", line)
			makes = append(makes, target)
			continue
		}
		cmd, err := parses(t, line)
		require.NoError(t, err, "README: %q", line)
		require.NotEmpty(t, cmd, "README: %q names no command", line)
	}
	require.Equal(t, []string{"dev", "test"}, makes, "the README's two commands")
}

// The check fails on what it must catch.
func TestReadmeCommandsParseRefuses(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"queuety wrok --once",
		"queuety work --no-such-flag",
		"queuety migrate --wp-config",
	} {
		cmd, err := parses(t, line)
		require.True(t, err != nil || cmd == "", "%q was accepted as %q", line, cmd)
	}
	cmd, err := parses(t, "queuety work --wp-config /x/wp-config.php --queue a,b --once")
	require.NoError(t, err)
	require.Equal(t, "work", cmd)
}
