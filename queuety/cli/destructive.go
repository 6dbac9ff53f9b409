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
		Usage: "delete completed jobs (and other kinds of rows) older than N days",
		Description: `Deletes the rows of --kind whose age is past --older-than days, a few hundred
rows per statement: completed (completed jobs), buried (buried jobs), logs (log
rows), events (workflow events), workflows (finished workflows with their
events, jobs and signals). It keeps every row a live row still needs: a job a
pending job depends on, and the jobs, events and log rows of a job or workflow
that has not finished. It says how many it would delete and goes ahead only
with --yes, or after a "y" when run at a terminal; --dry-run only counts.
Without --older-than the age is the site's QUEUETY_RETENTION_DAYS (the
environment, else the define in --wp-config), else 7: what
` + "`wp queuety purge`" + ` takes.

   queuety purge --older-than 30 --dry-run
   queuety purge --older-than 30 --yes
   queuety purge --kind logs,events --older-than 90 --yes
   queuety purge --kind completed,workflows,buried,logs,events --older-than 7 --yes`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "older-than", DefaultText: "the site's QUEUETY_RETENTION_DAYS (environment or --wp-config), else 7", Usage: "age in `days`"},
			&cli.StringFlag{Name: "kind", Value: "completed", Usage: "comma-separated kinds: completed, buried, logs, events, workflows"},
			jsonFlag(),
		}, confirmFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if _, _, err := purgeJobsAge.days(c); err != nil {
				return err
			}
			if _, err := purgeKinds(c.String("kind")); err != nil {
				return usagef("--kind %q: %v", c.String("kind"), err)
			}
			return checkConfirmFlags(c)
		}, func(c *cli.Context, client *queuety.Client) error {
			kinds, _ := purgeKinds(c.String("kind"))
			days, _, err := purgeJobsAge.days(c)
			if err != nil {
				return err
			}
			age := time.Duration(days) * 24 * time.Hour
			counts := map[string]int{}
			total := 0
			var parts []string
			for _, k := range kinds {
				n, err := client.CountRetention(c.Context, k, age)
				if err != nil {
					return err
				}
				counts[string(k)] = n
				total += n
				parts = append(parts, fmt.Sprintf("%d %s", n, kindNoun(k)))
			}
			what := strings.Join(parts, ", ")
			if c.Bool("dry-run") {
				if c.Bool("json") {
					return printJSON(c, map[string]any{"dry_run": true, "would_purge": total, "kinds": counts})
				}
				fmt.Fprintf(c.App.Writer, "Would purge %s older than %d days.\n", what, days)
				return nil
			}
			done := map[string]int{}
			purged := 0
			if total > 0 {
				if ok, err := a.confirm(c, fmt.Sprintf("delete %s older than %d days", what, days)); !ok {
					return err
				}
				for _, k := range kinds {
					n, err := client.Purge(c.Context, k, age)
					done[string(k)] = n
					purged += n
					if err != nil {
						return err
					}
				}
			} else {
				for _, k := range kinds {
					done[string(k)] = 0
				}
			}
			if c.Bool("json") {
				return printJSON(c, map[string]any{"purged": purged, "kinds": done})
			}
			parts = parts[:0]
			for _, k := range kinds {
				parts = append(parts, fmt.Sprintf("%d %s", done[string(k)], kindNoun(k)))
			}
			fmt.Fprintf(c.App.Writer, "Purged %s.\n", strings.Join(parts, ", "))
			return nil
		}),
	}
}

// purgeKinds parses --kind, in the order a sweep deletes them (workflows
// before their jobs and events are counted alone).
func purgeKinds(s string) ([]queuety.RetentionKind, error) {
	want := map[queuety.RetentionKind]bool{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, err := queuety.ParseRetentionKind(part)
		if err != nil {
			return nil, err
		}
		want[k] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no kind named")
	}
	var out []queuety.RetentionKind
	for _, k := range queuety.RetentionKinds {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

func kindNoun(k queuety.RetentionKind) string {
	switch k {
	case queuety.RetainCompleted:
		return "completed jobs"
	case queuety.RetainBuried:
		return "buried jobs"
	case queuety.RetainLogs:
		return "log rows"
	case queuety.RetainEvents:
		return "workflow events"
	default:
		return "finished workflows"
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
		Flags: append(confirmFlags(), jsonFlag()),
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
			row := describeJob(j, client.MaxAttemptsOf(a.reg, j))
			if c.Bool("dry-run") {
				if c.Bool("json") {
					return printJSON(c, jobAction{ID: id, Action: "deleted", DryRun: true})
				}
				fmt.Fprintf(c.App.Writer, "Would delete %s.\n", row)
				return nil
			}
			if ok, err := a.confirm(c, "delete "+row); !ok {
				return err
			}
			if err := client.DeleteJob(c.Context, id); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, jobAction{ID: id, Action: "deleted"})
			}
			fmt.Fprintf(c.App.Writer, "Job #%d deleted.\n", id)
			return nil
		}),
	}
}

// describeJob is one line naming a job for a confirmation; limit is the
// attempt limit a worker applies (Client.MaxAttemptsOf), as job inspect
// prints it.
func describeJob(j *queuety.JobInfo, limit int) string {
	return fmt.Sprintf("job #%d %s (%s) in queue %s, attempts %d/%d, created %s",
		j.ID, printable(j.Handler), j.Status, printable(j.Queue), j.Attempts, limit, store.DateTime(j.CreatedAt))
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
