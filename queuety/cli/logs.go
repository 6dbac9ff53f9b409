package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

// logRowView is a log row as `log --json` prints it: every column, the
// context decoded and the time as the plugin writes it (the outer fields
// take the embedded view's JSON names; the order stays the table's).
type logRowView struct {
	queuety.LogEntry
	Context   any    `json:"context"`
	CreatedAt string `json:"created_at"`
}

func viewOfLog(l *queuety.LogEntry) logRowView {
	v := logRowView{LogEntry: *l, CreatedAt: store.DateTime(l.CreatedAt)}
	if l.Context != nil {
		v.Context = rawOrString(*l.Context)
	}
	return v
}

func (a *app) logCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "query the log rows (wp queuety log)",
		Description: `Prints log rows as the plugin's ` + "`wp queuety log`" + ` reads them. The first filter
given among --job, --workflow, --handler, --event and --since picks the order:
a job's, a workflow's and --since rows oldest first, a handler's and an event's
newest first; the other filters given narrow it (the plugin ignores them).
--limit (default 50) caps every read but a job's or a workflow's, which are
whole unless --limit is given. With no filter: the last 24 hours.

--since takes a time ("2026-12-01 10:00:00", "2026-12-01", RFC 3339, in UTC
unless it says otherwise) or an age ("90m", "2h", "7d").

   queuety log --job 42
   queuety log --handler send_email --event buried --limit 20
   queuety log --since 2h --json | jq '.[] | select(.event == "failed")'
   queuety log --sites '/var/www/*/wp-config.php' --site /var/www/shop --event buried
   queuety log purge --older-than 30 --yes`,
		Flags: append([]cli.Flag{
			&cli.Int64Flag{Name: "job", Usage: "only this job's rows"},
			&cli.Int64Flag{Name: "workflow", Usage: "only this workflow's rows"},
			&cli.StringFlag{Name: "handler", Usage: "only this handler's rows"},
			&cli.StringFlag{Name: "event", Usage: "only this event: " + strings.Join(store.LogEvents, ", ")},
			&cli.StringFlag{Name: "since", Usage: "rows created at or after this `time` or age"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many rows"},
			formatFlag(), jsonFlag(),
		}, siteFlags(false)...),
		Subcommands: []*cli.Command{a.logPurgeCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown log command %q (see queuety log --help)", c.Args().First())
			}
			f, err := logFilter(c, time.Now())
			if err != nil {
				return err
			}
			if err := checkFormat(c, true); err != nil {
				return err
			}
			return withClient(nil, func(c *cli.Context, client *queuety.Client) error {
				rows, err := client.Logs(c.Context, f)
				if err != nil {
					return err
				}
				if format := c.String("format"); format != "table" && !c.Bool("json") {
					it := items{fields: []string{"id", "event", "handler", "job_id", "workflow_id", "step_index", "attempt", "duration_ms", "created_at"}}
					for _, l := range rows {
						it.add(l.ID, l.Event, l.Handler, orNil(l.JobID), orNil(l.WorkflowID), orNil(l.StepIndex),
							orNil(l.Attempt), orNil(l.DurationMS), store.DateTime(l.CreatedAt))
					}
					return printItems(c, format, it)
				}
				if c.Bool("json") {
					views := make([]logRowView, len(rows))
					for i := range rows {
						views[i] = viewOfLog(&rows[i])
					}
					return printJSON(c, views)
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tEVENT\tHANDLER\tJOB\tWORKFLOW\tSTEP\tATTEMPT\tDURATION_MS\tCREATED")
				for _, l := range rows {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Event, esc(l.Handler), orDash(l.JobID),
						orDash(l.WorkflowID), orDash(l.StepIndex), orDash(l.Attempt), orDash(l.DurationMS),
						store.DateTime(l.CreatedAt))
				}
				return tw.Flush()
			})(c)
		},
	}
}

// logFilter reads the filter flags of `log`.
func logFilter(c *cli.Context, now time.Time) (queuety.LogFilter, error) {
	var f queuety.LogFilter
	if c.IsSet("job") {
		if c.Int64("job") < 1 {
			return f, usagef("--job %d: not a job id", c.Int64("job"))
		}
		f.JobID = ptr(c.Int64("job"))
	}
	if c.IsSet("workflow") {
		if c.Int64("workflow") < 1 {
			return f, usagef("--workflow %d: not a workflow id", c.Int64("workflow"))
		}
		f.WorkflowID = ptr(c.Int64("workflow"))
	}
	if c.IsSet("handler") {
		f.Handler = ptr(c.String("handler"))
	}
	if c.IsSet("event") {
		ev := c.String("event")
		if !slices.Contains(store.LogEvents, ev) {
			return f, usagef("--event %q: want one of %s", ev, strings.Join(store.LogEvents, ", "))
		}
		f.Event = &ev
	}
	if c.IsSet("since") {
		t, err := parseSince(c.String("since"), now)
		if err != nil {
			return f, usagef("--since %q: %v", c.String("since"), err)
		}
		f.Since = &t
	}
	if c.Int("limit") < 1 {
		return f, usagef("--limit %d: must be at least 1", c.Int("limit"))
	}
	// Queuety::query_logs reads a job's and a workflow's rows whole.
	if c.IsSet("limit") || !(f.JobID != nil || f.WorkflowID != nil) {
		f.Limit = c.Int("limit")
	}
	return f, nil
}

// parseSince reads a time (UTC unless it has a zone) or an age before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	age := strings.TrimPrefix(s, "-")
	if days, ok := strings.CutSuffix(age, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour).UTC(), nil
		}
	}
	if d, err := time.ParseDuration(age); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf(`want a time ("2026-12-01 10:00:00", "2026-12-01", RFC 3339) or an age ("90m", "2h", "7d")`)
}

func (a *app) logPurgeCommand() *cli.Command {
	return &cli.Command{
		Name:  "purge",
		Usage: "delete log rows older than N days (wp queuety log purge)",
		Description: `Deletes the log rows older than --older-than days, a few hundred per
statement, as ` + "`purge --kind logs`" + ` does: the rows of a job or workflow that has not
finished are kept (the plugin deletes those too). It says how many it would
delete and goes ahead only with --yes, or after a "y" when run at a terminal;
--dry-run only counts.

   queuety log purge --older-than 30 --dry-run
   queuety log purge --older-than 30 --yes`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "older-than", DefaultText: "the site's QUEUETY_LOG_RETENTION_DAYS when above 0 (environment or --wp-config); required otherwise", Usage: "age in `days`"},
			jsonFlag(),
		}, confirmFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if _, _, err := purgeLogsAge.days(c); err != nil {
				return usagef("log purge: %v", err)
			}
			return checkConfirmFlags(c)
		}, func(c *cli.Context, client *queuety.Client) error {
			days, _, err := purgeLogsAge.days(c)
			if err != nil {
				return err
			}
			age := time.Duration(days) * 24 * time.Hour
			n, err := client.CountRetention(c.Context, queuety.RetainLogs, age)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, fmt.Sprintf("Would purge %d log entries older than %d days.", n, days), "would_purge", n)
			}
			purged := 0
			if n > 0 {
				if ok, err := a.confirm(c, fmt.Sprintf("delete %d log entries older than %d days", n, days)); !ok {
					return err
				}
				if purged, err = client.Purge(c.Context, queuety.RetainLogs, age); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				return printJSON(c, map[string]int{"purged": purged})
			}
			fmt.Fprintf(c.App.Writer, "Purged %d log entries older than %d days.\n", purged, days)
			return nil
		}),
	}
}

// ptr is a pointer to a copy of v (a filter flag that is set).
func ptr[T any](v T) *T { return &v }
