package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// confirmFlags are the flags of a command that deletes or rewrites rows
// (purge, job retry-buried, job delete). New values each call: urfave/cli
// flags hold parse state.
func confirmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "go ahead without asking (needed when stdin is not a terminal)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print what would change, and change nothing"},
	}
}

// errAborted is a "no" at the prompt: nothing changed.
var errAborted = errors.New("aborted: nothing changed")

// confirm says whether a destructive command goes ahead, once the caller
// knows what it would touch (plan, e.g. "delete 3 completed jobs older
// than 7 days"). With --dry-run it never does; with --yes it does; on a
// terminal it asks; otherwise it refuses with exit 2 naming --yes, so a
// script or a cron line cannot delete rows by accident.
func (a *app) confirm(c *cli.Context, plan string) (bool, error) {
	switch {
	case c.Bool("yes") && c.Bool("dry-run"):
		return false, usagef("--yes and --dry-run together: choose one")
	case c.Bool("dry-run"):
		return false, nil
	case c.Bool("yes"):
		return true, nil
	case !a.tty:
		return false, usagef("%s would %s: pass --yes to go ahead, or --dry-run to see it without changing anything", commandPath(c), plan)
	}
	fmt.Fprintf(c.App.ErrWriter, "%s will %s. Go ahead? [y/N] ", commandPath(c), plan)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, errAborted
}

// commandPath is the command as typed ("job retry-buried"); urfave's
// FullName leaves out the parent when the command runs.
func commandPath(c *cli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != c.App.Name {
			names = append([]string{ctx.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// interactive is true when stdin is a terminal someone can answer at.
func interactive(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	return ok && isTerminal(f)
}

// stdinOr is the app's stdin: opts' reader, or the process's.
func stdinOr(r io.Reader) io.Reader {
	if r == nil {
		return os.Stdin
	}
	return r
}
