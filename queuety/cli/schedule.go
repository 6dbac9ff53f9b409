package cli

import (
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// scheduleColumns are the fields of the plugin's `wp queuety schedule
// list`, in its order and with its names (its --format=json keys).
var scheduleColumns = []string{"ID", "Handler", "Expression", "Type", "Queue", "Enabled", "Last Run", "Next Run"}

func (a *app) scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "list, add, remove and run recurring schedules (the plugin's `wp queuety schedule`)",
		Description: `Recurring jobs from the plugin's schedules table. ` + "`queuety work`" + ` ticks the table
every --schedule-interval (60 s) and enqueues the due ones; so do the plugin's
workers, and each due run is enqueued once however many tick.`,
		Subcommands: []*cli.Command{
			a.scheduleListCommand(), a.scheduleAddCommand(), a.scheduleRemoveCommand(), a.scheduleRunCommand(),
		},
	}
}

func (a *app) scheduleListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "every schedule, as `wp queuety schedule list`",
		Description: `The columns of the plugin's list: ID, Handler, Expression, Type, Queue,
Enabled (yes/no), Last Run (— when never), Next Run (UTC).

   queuety schedule list
   queuety schedule list --json | jq '.[] | select(.Enabled == "yes") | .Handler'`,
		Flags: []cli.Flag{
			formatFlag(), jsonFlag(),
		},
		Action: withClient(func(c *cli.Context) error { return checkFormat(c, true) }, func(c *cli.Context, client *queuety.Client) error {
			rows, err := client.Schedules(c.Context)
			if err != nil {
				return err
			}
			format := c.String("format")
			if c.Bool("json") {
				format = "json"
			}
			return printSchedules(c, rows, format)
		}),
	}
}

// scheduleItem is one row as the plugin's list shows it.
func scheduleItem(s *queuety.Schedule) []string {
	last := "—"
	if s.LastRun != nil {
		last = store.DateTime(*s.LastRun)
	}
	enabled := "no"
	if s.Enabled {
		enabled = "yes"
	}
	return []string{strconv.FormatInt(s.ID, 10), s.Handler, s.Expression, s.ExpressionType, s.Queue, enabled, last, store.DateTime(s.NextRun)}
}

func printSchedules(c *cli.Context, rows []queuety.Schedule, format string) error {
	if format != "table" {
		// wp-cli's format_items: the column names as keys, ID a number.
		it := items{fields: scheduleColumns}
		for i := range rows {
			row := make([]any, 0, len(scheduleColumns))
			row = append(row, rows[i].ID)
			for _, v := range scheduleItem(&rows[i])[1:] {
				row = append(row, v)
			}
			it.add(row...)
		}
		return printItems(c, format, it)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	for k, col := range scheduleColumns {
		if k > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, col)
	}
	fmt.Fprintln(tw)
	for i := range rows {
		for k, v := range scheduleItem(&rows[i]) {
			if k > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, esc(v))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (a *app) scheduleAddCommand() *cli.Command {
	var n queuety.NewSchedule
	return &cli.Command{
		Name: "add", Usage: "add a recurring schedule, as `wp queuety schedule add`", ArgsUsage: "<handler>",
		Description: `Writes the row the plugin's Queuety::schedule(<handler>, <payload>)->every()|cron()
writes: next_run is the first run after now. An interval (--every) is a whole
number and a unit, PHP's relative format ("10 minutes", "1 hour 30 minutes",
"2 weeks"), counted from each tick; a cron expression (--cron) has 5 fields
(minute hour day-of-month month day-of-week) of numbers, *, ranges, steps and
lists, in UTC, and when both day fields are set a day must match both (the
plugin's rule; classic cron takes either).

   queuety schedule add cleanup_handler --every "1 hour"
   queuety schedule add nightly_report --cron "0 3 * * *" --queue reports
   queuety schedule add sync_inventory --every "5 minutes" --overlap skip --payload '{"full":false}'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "every", Usage: "interval, e.g. \"1 hour\" or \"30 minutes\""},
			&cli.StringFlag{Name: "cron", Usage: "5-field cron expression, e.g. \"0 3 * * *\""},
			&cli.StringFlag{Name: "payload", Value: "{}", Usage: "JSON object every run's job gets"},
			&cli.StringFlag{Name: "queue", Value: queuety.DefaultQueue, Usage: "the jobs' queue"},
			&cli.StringFlag{Name: "overlap", Value: queuety.OverlapAllow, Usage: "while the handler has a pending or processing job: allow (dispatch anyway), skip (skip the run) or buffer (run once it is idle)"},
			jsonFlag(),
		},
		Action: withClient(func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("want one <handler>, got %d arguments", c.NArg())
			}
			if !c.IsSet("every") && !c.IsSet("cron") {
				return usagef("You must specify either --every or --cron.")
			}
			if c.IsSet("every") && c.IsSet("cron") {
				return usagef("--every and --cron together: choose one")
			}
			n = queuety.NewSchedule{Handler: c.Args().First(), Every: c.String("every"), Cron: c.String("cron"),
				Queue: c.String("queue"), Overlap: c.String("overlap")}
			if _, err := queuety.EncodePayload([]byte(c.String("payload"))); err != nil {
				return usagef("--payload: %v", err)
			}
			n.Payload = []byte(c.String("payload"))
			if err := queuety.CheckSchedule(n); err != nil {
				return usageError{err}
			}
			return nil
		}, func(c *cli.Context, client *queuety.Client) error {
			id, err := client.AddSchedule(c.Context, n)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				s, err := client.FindSchedule(c.Context, n.Handler)
				if err != nil {
					return err
				}
				return printJSON(c, map[string]any{"id": id, "handler": n.Handler, "next_run": store.DateTime(s.NextRun)})
			}
			fmt.Fprintf(c.App.Writer, "Schedule #%d added for handler '%s'.\n", id, esc(n.Handler))
			return nil
		}),
	}
}

func (a *app) scheduleRemoveCommand() *cli.Command {
	return &cli.Command{
		Name: "remove", Usage: "remove the schedule of a handler, as `wp queuety schedule remove`", ArgsUsage: "<handler>",
		Description: `Shows the schedule and deletes its row with --yes, or after a "y" when run at a
terminal; --dry-run only shows it. Jobs it already enqueued stay.

   queuety schedule remove cleanup_handler --dry-run
   queuety schedule remove cleanup_handler --yes`,
		Flags: append([]cli.Flag{jsonFlag()}, confirmFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("want one <handler>, got %d arguments", c.NArg())
			}
			return checkConfirmFlags(c)
		}, func(c *cli.Context, client *queuety.Client) error {
			handler := c.Args().First()
			s, err := client.FindSchedule(c.Context, handler)
			if errors.Is(err, queuety.ErrScheduleNotFound) {
				return fmt.Errorf("no schedule found for handler '%s': %w", esc(handler), queuety.ErrScheduleNotFound)
			}
			if err != nil {
				return err
			}
			row := describeSchedule(s)
			if c.Bool("dry-run") {
				return dryRun(c, "Would remove "+row+".", "would_remove", s.ID)
			}
			if ok, err := a.confirm(c, "remove "+row); !ok {
				return err
			}
			removed, err := client.RemoveSchedule(c.Context, handler)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, map[string]any{"removed": removed, "handler": handler})
			}
			fmt.Fprintf(c.App.Writer, "Schedule for handler '%s' removed.\n", esc(handler))
			return nil
		}),
	}
}

// describeSchedule is one line naming a schedule for a confirmation.
func describeSchedule(s *queuety.Schedule) string {
	kind := "every"
	if s.ExpressionType == "cron" {
		kind = "cron"
	}
	return fmt.Sprintf("schedule #%d for handler '%s' (%s %s, queue %s, next run %s)",
		s.ID, printable(s.Handler), kind, printable(s.Expression), printable(s.Queue), store.DateTime(s.NextRun))
}

func (a *app) scheduleRunCommand() *cli.Command {
	return &cli.Command{
		Name: "run", Usage: "run a scheduler tick now, as `wp queuety schedule run`",
		Description: `Enqueues one job for every due schedule, as one tick of the worker's scheduler
(the plugin's run takes no handler: it ticks them all). Safe beside running
workers: a due run is enqueued once. --dry-run lists the due schedules.

   queuety schedule run
   queuety schedule run --dry-run --json`,
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "list the due schedules, and enqueue nothing"},
		},
		Action: withClient(func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("run takes no arguments: it ticks every due schedule, as the plugin's does")
			}
			return nil
		}, func(c *cli.Context, client *queuety.Client) error {
			if c.Bool("dry-run") {
				due, err := client.DueSchedules(c.Context)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					names := []string{}
					for _, s := range due {
						names = append(names, s.Handler)
					}
					return printJSON(c, map[string]any{"dry_run": true, "due": names})
				}
				fmt.Fprintf(c.App.Writer, "Would run %d due schedules.\n", len(due))
				for i := range due {
					fmt.Fprintf(c.App.Writer, "  %s\n", describeSchedule(&due[i]))
				}
				return nil
			}
			res, err := client.TickSchedules(c.Context)
			for _, u := range res.Unreadable {
				fmt.Fprintf(c.App.ErrWriter, "Warning: schedule #%d (%s) left alone: %s\n", u.ID, printable(u.Handler), printable(u.Err))
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if res.Unreadable == nil {
					res.Unreadable = []queuety.UnreadableSchedule{}
				}
				return printJSON(c, map[string]any{"enqueued": res.Dispatched, "skipped": res.Skipped,
					"waiting": res.Waiting, "unreadable": res.Unreadable})
			}
			fmt.Fprintf(c.App.Writer, "Scheduler tick complete. Enqueued %d jobs.\n", res.Dispatched)
			return nil
		}),
	}
}
