package cli

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// discoverScript finds the handler classes under a directory as the
// plugin's HandlerDiscovery does; PHP's reflection is the only thing that
// can tell what a class implements, so discover runs it in php.
//
//go:embed php/discover.php
var discoverScript []byte

// discovered is one class the script found.
type discovered struct {
	Class string  `json:"class"`
	Type  string  `json:"type"`
	Name  *string `json:"name"`
}

func (a *app) discoverCommand() *cli.Command {
	return &cli.Command{
		Name:      "discover",
		Usage:     "list the handler, step and job classes under a directory (wp queuety discover)",
		ArgsUsage: "<directory> <namespace>",
		Description: `Scans <directory> for PHP classes of <namespace> (PSR-4: Sub/Name.php is
<namespace>\Sub\Name) that implement Queuety\Handler, Queuety\Step or
Queuety\Contracts\Job and are not abstract, as the plugin's discover does, and
lists each with its type (handler, step, job) and its #[QueuetyHandler] name.
It runs --php-binary over the directory (no WordPress, no database). The
directory's classes load by PSR-4; --bootstrap files (php-bridge/autoload.php,
the application's vendor/autoload.php) load what else they need. Without
Queuety's classes, empty stand-ins of its Handler, Step and Contracts\Job
interfaces are declared, enough for classes that only implement them.

--register counts the named handlers, as the plugin's does. Like the plugin's,
the registration lives only in the process that makes it: a worker that runs
them registers them at start (its bootstrap).

   queuety discover app/Jobs 'App\Jobs' --bootstrap php-bridge/autoload.php
   queuety discover app/Jobs 'App\Jobs' --bootstrap vendor/autoload.php --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "register", Usage: "count the named handlers registered, as the plugin prints them"},
			&cli.StringFlag{Name: "php-binary", Value: "php", EnvVars: []string{"QUEUETY_PHP_BINARY"}, Usage: "the PHP `command` that runs the scan"},
			&cli.StringSliceFlag{Name: "bootstrap", Usage: "PHP `file` to require first, loading Queuety's and the application's classes (repeatable)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usagef("discover takes <directory> <namespace>")
			}
			found, err := runDiscover(c)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if found == nil {
					found = []discovered{}
				}
				return printJSON(c, found)
			}
			w := c.App.Writer
			if len(found) == 0 {
				fmt.Fprintln(w, "No handlers found.")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "class\ttype\tname")
			named := 0
			for _, d := range found {
				name := "(none)"
				if d.Name != nil {
					name, named = *d.Name, named+1
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", esc(d.Class), esc(d.Type), esc(name))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if c.Bool("register") {
				fmt.Fprintf(w, "Registered %d handlers.\n", named)
			} else {
				fmt.Fprintln(w, "Use --register to register discovered handlers.")
			}
			return nil
		},
	}
}

// runDiscover runs the scan script in PHP and reads what it found.
func runDiscover(c *cli.Context) ([]discovered, error) {
	argv, err := phppool.SplitCommand(c.String("php-binary"))
	if err != nil || len(argv) == 0 {
		return nil, usagef("--php-binary %q: not a command", c.String("php-binary"))
	}
	args := append(append(argv[1:], "--", c.Args().Get(0), c.Args().Get(1)), c.StringSlice("bootstrap")...)
	cmd := exec.CommandContext(c.Context, argv[0], args...)
	cmd.Stdin = bytes.NewReader(discoverScript)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 && msg != "" {
			return nil, usagef("discover: %s", msg) // the directory or Queuety's classes are missing
		}
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return nil, fmt.Errorf("discover: %s: %w: %s", c.String("php-binary"), err, msg)
	}
	var found []discovered
	if err := json.Unmarshal(stdout.Bytes(), &found); err != nil {
		return nil, fmt.Errorf("discover: unexpected output from PHP: %w: %q", err, stdout.String())
	}
	return found, nil
}
