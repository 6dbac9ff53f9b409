package cli

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// The commands that delete or rewrite rows say what they would touch and
// go ahead only with --yes (or a "y" at a terminal); --dry-run previews.

// checkConfirmFlags refuses --yes with --dry-run before anything connects.
func checkConfirmFlags(c *cli.Context) error {
	if c.Bool("yes") && c.Bool("dry-run") {
		return usagef("--yes and --dry-run together: choose one")
	}
	return nil
}

// dryRun prints a preview: text, or JSON with dry_run set.
func dryRun(c *cli.Context, text string, key string, n any) error {
	if c.Bool("json") {
		return printJSON(c, map[string]any{"dry_run": true, key: n})
	}
	fmt.Fprintln(c.App.Writer, text)
	return nil
}

func (a *app) purgeCommand() *cli.Command {
	return &cli.Command{
		Name:  "purge",
		Usage: "delete completed jobs older than N days",
		Description: `Deletes completed job rows whose completed_at is older than --older-than days
(their log rows stay). It says how many it would delete and goes ahead only
with --yes, or after a "y" when run at a terminal; --dry-run only counts.

   queuety purge --older-than 30 --dry-run
   queuety purge --older-than 30 --yes`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "older-than", Value: 7, EnvVars: []string{"QUEUETY_RETENTION_DAYS"}, Usage: "age in `days`"},
			jsonFlag(),
		}, confirmFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if c.Int("older-than") < 0 {
				return usagef("--older-than %d: must not be negative", c.Int("older-than"))
			}
			return checkConfirmFlags(c)
		}, func(c *cli.Context, client *queuety.Client) error {
			days := c.Int("older-than")
			age := time.Duration(days) * 24 * time.Hour
			n, err := client.CountPurgeable(c.Context, age)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, fmt.Sprintf("Would purge %d completed jobs older than %d days.", n, days), "would_purge", n)
			}
			if n > 0 {
				if ok, err := a.confirm(c, fmt.Sprintf("delete %d completed jobs older than %d days", n, days)); !ok {
					return err
				}
				if n, err = client.PurgeCompleted(c.Context, age); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				return printJSON(c, map[string]int{"purged": n})
			}
			fmt.Fprintf(c.App.Writer, "Purged %d completed jobs.\n", n)
			return nil
		}),
	}
}

func (a *app) retryBuriedCommand() *cli.Command {
	return &cli.Command{
		Name: "retry-buried", Usage: "retry every buried job",
		Description: `Makes every buried job (of --queue) pending again. It says how many and goes
ahead only with --yes, or after a "y" when run at a terminal; --dry-run only
counts.

   queuety job retry-buried --queue emails --dry-run
   queuety job retry-buried --queue emails --yes`,
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "queue", Usage: "only this queue"}, jsonFlag()}, confirmFlags()...),
		Action: withClient(checkConfirmFlags, func(c *cli.Context, client *queuety.Client) error {
			q := c.String("queue")
			n, err := client.CountBuried(c.Context, q)
			if err != nil {
				return err
			}
			where := ""
			if q != "" {
				where = fmt.Sprintf(" in queue %q", q)
			}
			if c.Bool("dry-run") {
				return dryRun(c, fmt.Sprintf("Would retry %d buried jobs%s.", n, where), "would_retry", n)
			}
			if n > 0 {
				if ok, err := a.confirm(c, fmt.Sprintf("retry %d buried jobs%s", n, where)); !ok {
					return err
				}
				if n, err = client.RetryBuried(c.Context, q); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				return printJSON(c, map[string]int{"retried": n})
			}
			fmt.Fprintf(c.App.Writer, "Retried %d buried jobs.\n", n)
			return nil
		}),
	}
}

func (a *app) deleteJobCommand() *cli.Command {
	var id int64
	return &cli.Command{
		Name: "delete", Usage: "delete a job row (its logs stay)", ArgsUsage: "<id>",
		Description: `Shows the job and deletes its row with --yes, or after a "y" when run at a
terminal; --dry-run only shows it. Its log rows stay.

   queuety job delete 42 --dry-run
   queuety job delete 42 --yes`,
		Flags: confirmFlags(),
		Action: withClient(func(c *cli.Context) (err error) {
			if err := checkConfirmFlags(c); err != nil {
				return err
			}
			id, err = argID(c)
			return err
		}, func(c *cli.Context, client *queuety.Client) error {
			j, err := client.Job(c.Context, id)
			if err != nil {
				return err
			}
			row := describeJob(j)
			if c.Bool("dry-run") {
				fmt.Fprintf(c.App.Writer, "Would delete %s.\n", row)
				return nil
			}
			if ok, err := a.confirm(c, "delete "+row); !ok {
				return err
			}
			if err := client.DeleteJob(c.Context, id); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "Job #%d deleted.\n", id)
			return nil
		}),
	}
}

// describeJob is one line naming a job for a confirmation.
func describeJob(j *store.JobRow) string {
	return fmt.Sprintf("job #%d %s (%s) in queue %s, attempts %d/%d, created %s",
		j.ID, printable(j.Handler), j.Status, printable(j.Queue), j.Attempts, j.MaxAttempts, store.DateTime(j.CreatedAt))
}

// printable keeps control characters (an ESC sequence in a handler name
// written by anyone with database access) off the operator's terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
