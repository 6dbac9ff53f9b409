package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

func (a *app) jobCommand() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "list, inspect and act on jobs",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "newest jobs first",
				Description: `Rows that can never run as they are (a depends_on cycle, a missing or buried
dependency, concurrency limit 0, a step job of a missing workflow, a processing
row without a usable reserved_at) are marked "stuck: <reason>" (JSON: "stuck");
--stuck lists only those (among the oldest pending jobs, as status does).

   queuety job list --status buried --queue default --limit 20
   queuety job list --stuck
   queuety job list --json | jq '.[].id'
   queuety job list --network /var/www/html/wp-config.php --site "blog 3"`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "queue", Usage: "only this queue"},
					&cli.StringFlag{Name: "status", Usage: "pending, processing, completed, failed or buried"},
					&cli.StringFlag{Name: "handler", Usage: "only this handler"},
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many jobs"},
					&cli.BoolFlag{Name: "stuck", Usage: "only jobs that can never run as they are, with the reason"},
					formatFlag(), jsonFlag(),
				}, siteFlags(false)...),
				Action: func(c *cli.Context) error {
					if c.Int("limit") < 1 {
						return usagef("--limit %d: must be at least 1", c.Int("limit"))
					}
					if err := checkFormat(c, true); err != nil {
						return err
					}
					if st := c.String("status"); st != "" && !slices.Contains(store.Statuses, st) {
						return usagef("--status %q: want one of %s", st, strings.Join(store.Statuses, ", "))
					}
					client, err := connect(c)
					if err != nil {
						return err
					}
					defer client.Close()
					f := queuety.JobFilter{Queue: c.String("queue"), Status: c.String("status"), Handler: c.String("handler"), Limit: c.Int("limit")}
					rows, err := listJobs(c, client, f)
					if err != nil {
						return err
					}
					stuck, err := client.StuckJobsByID(c.Context, jobIDs(rows))
					if err != nil {
						return err
					}
					if f := c.String("format"); f != "table" && !c.Bool("json") {
						// The plugin's list: id, queue, handler, status, attempts, priority, created_at.
						it := items{fields: []string{"id", "queue", "handler", "status", "attempts", "priority", "created_at"}}
						for _, j := range rows {
							it.add(j.ID, j.Queue, j.Handler, j.Status, j.Attempts, j.Priority, store.DateTime(j.CreatedAt))
						}
						return printItems(c, f, it)
					}
					if c.Bool("json") {
						views := make([]jobView, len(rows))
						for i := range rows {
							views[i] = viewOf(&rows[i], nil, stuck)
							views[i].MaxAttempts = client.MaxAttemptsOf(a.reg, &rows[i])
						}
						return printJSON(c, views)
					}
					// The NOTE column appears only when a row has one, so the
					// usual listing keeps its columns.
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tQUEUE\tHANDLER\tSTATUS\tATTEMPTS\tPRIORITY\tCREATED\t"+noteHeader(len(stuck) > 0))
					for i := range rows {
						j := &rows[i]
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", j.ID, esc(j.Queue), esc(j.Handler), j.Status,
							j.Attempts, client.MaxAttemptsOf(a.reg, j), j.Priority, store.DateTime(j.CreatedAt), stuckNote(stuck, j.ID))
					}
					return tw.Flush()
				},
			},
			{
				Name: "inspect", Usage: "a job's fields, payload and log history", ArgsUsage: "<id>",
				Description: `Shows the job's columns (with its workflow, step, dependency, concurrency group
and worker session), why it can never run when it cannot ("stuck: <reason>"),
its payload and its log rows.

   queuety job inspect 42
   queuety job inspect 42 --json | jq .logs
   queuety job inspect 42 --network /var/www/html/wp-config.php --site example.com/shop/`,
				Flags: append([]cli.Flag{jsonFlag()}, siteFlags(false)...),
				Action: byIDAction(func(c *cli.Context, client *queuety.Client, id int64) error {
					j, err := client.Job(c.Context, id)
					if err != nil {
						return err
					}
					logs, err := client.JobLogs(c.Context, id)
					if err != nil {
						return err
					}
					stuck, err := client.StuckJobsByID(c.Context, []int64{id})
					if err != nil {
						return err
					}
					v := viewOf(j, logs, stuck)
					// The limit a worker applies (handler options, the
					// payload's __queuety_runtime), not the column alone:
					// a job buried at a runtime limit of 2 reads 2/2, as
					// on the dashboard.
					v.MaxAttempts = client.MaxAttemptsOf(a.reg, j)
					if c.Bool("json") {
						return printJSON(c, v)
					}
					return printInspect(c, v)
				}),
			},
			{
				Name: "retry", Usage: "make a job pending again now (attempts are kept)", ArgsUsage: "<id>",
				Description: "   queuety job retry 42",
				Flags:       []cli.Flag{jsonFlag()},
				Action: byID("retried", func(c *cli.Context, client *queuety.Client, id int64) (string, error) {
					return fmt.Sprintf("Job #%d queued for retry.", id), client.RetryJob(c.Context, id)
				}),
			},
			a.retryBuriedCommand(),
			{
				Name: "bury", Usage: "bury a job by hand", ArgsUsage: "<id>",
				Description: `   queuety job bury 42 --message "bad address, do not retry"`,
				Flags:       []cli.Flag{&cli.StringFlag{Name: "message", Value: queuety.ManualBuryMessage, Usage: "the error_message to store"}, jsonFlag()},
				Action: byID("buried", func(c *cli.Context, client *queuety.Client, id int64) (string, error) {
					return fmt.Sprintf("Job #%d buried.", id), client.BuryJob(c.Context, id, c.String("message"))
				}),
			},
			a.deleteJobCommand(),
		},
	}
}

// byIDAction is withClient for commands taking one job id.
func byIDAction(fn func(c *cli.Context, client *queuety.Client, id int64) error) cli.ActionFunc {
	var id int64
	return withClient(func(c *cli.Context) (err error) {
		id, err = argID(c)
		return err
	}, func(c *cli.Context, client *queuety.Client) error { return fn(c, client, id) })
}

// byID runs a one-line action on one job and prints its message.
// With --json it prints {"id": id, "action": action}.
func byID(action string, fn func(c *cli.Context, client *queuety.Client, id int64) (string, error)) cli.ActionFunc {
	return byIDAction(func(c *cli.Context, client *queuety.Client, id int64) error {
		msg, err := fn(c, client, id)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(c, jobAction{ID: id, Action: action})
		}
		fmt.Fprintln(c.App.Writer, msg)
		return nil
	})
}

// jobAction is what job retry, bury and delete print with --json.
type jobAction struct {
	ID     int64  `json:"id"`
	Action string `json:"action"` // retried, buried, deleted
	DryRun bool   `json:"dry_run,omitempty"`
}

// listJobs is the listing of `job list`: the filtered newest jobs, or
// with --stuck the jobs that can never run as they are (then filtered).
func listJobs(c *cli.Context, client *queuety.Client, f queuety.JobFilter) ([]queuety.JobInfo, error) {
	if !c.Bool("stuck") {
		return client.Jobs(c.Context, f)
	}
	d, err := client.Diagnose(c.Context, queuety.StuckScan{})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(d.Jobs))
	for i, j := range d.Jobs {
		ids[i] = j.ID
	}
	rows, err := client.JobsByID(c.Context, ids)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, j := range rows {
		if (f.Queue == "" || j.Queue == f.Queue) && (f.Status == "" || j.Status == f.Status) &&
			(f.Handler == "" || j.Handler == f.Handler) && len(out) < f.Limit {
			out = append(out, j)
		}
	}
	return out, nil
}

func jobIDs(rows []queuety.JobInfo) []int64 {
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return ids
}

// noteHeader is the header of the NOTE column, present only when some
// row has a note.
func noteHeader(shown bool) string {
	if shown {
		return "NOTE"
	}
	return ""
}

// stuckNote is the NOTE cell of a job that can never run as it is.
func stuckNote(stuck map[int64]queuety.StuckJob, id int64) string {
	s, ok := stuck[id]
	if !ok {
		return ""
	}
	return "stuck: " + esc(s.Reason)
}

func viewOf(j *queuety.JobInfo, logs []queuety.LogEntry, stuck map[int64]queuety.StuckJob) jobView {
	v := jobView{
		ID: j.ID, Queue: j.Queue, Handler: j.Handler, Payload: rawOrString(j.Payload), PayloadHash: j.PayloadHash,
		Priority: j.Priority, Status: j.Status, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		AvailableAt: store.DateTime(j.AvailableAt), ReservedAt: dateTime(j.ReservedAt), CompletedAt: dateTime(j.CompletedAt),
		FailedAt: dateTime(j.FailedAt), ErrorMessage: j.ErrorMessage, WorkflowID: j.WorkflowID,
		StepIndex: j.StepIndex, DependsOn: j.DependsOn, ConcurrencyGroup: j.ConcurrencyGroup,
		ConcurrencyLimit: j.ConcurrencyLimit, SessionID: j.SessionID,
		ReservedBy: j.ReservedBy, CreatedAt: store.DateTime(j.CreatedAt),
	}
	if s, ok := stuck[j.ID]; ok {
		v.Stuck = &stuckView{Kind: s.Kind, Reason: s.Reason}
	}
	if j.HeartbeatData != nil {
		v.HeartbeatData = rawOrString(*j.HeartbeatData)
	}
	for _, l := range logs {
		v.Logs = append(v.Logs, logView{ID: l.ID, Event: l.Event, Attempt: l.Attempt, DurationMS: l.DurationMS,
			ErrorMessage: l.ErrorMessage, ErrorClass: l.ErrorClass, CreatedAt: store.DateTime(l.CreatedAt)})
	}
	return v
}

// rawOrString embeds valid JSON as is and anything else as a JSON string,
// so a malformed payload can still be inspected.
func rawOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// dateTime formats a nullable time as the plugin's rows show it.
func dateTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := store.DateTime(*t)
	return &s
}

func str(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func i64(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

func tm(t sql.NullTime) *string {
	if !t.Valid {
		return nil
	}
	s := store.DateTime(t.Time)
	return &s
}

func printInspect(c *cli.Context, v jobView) error {
	w := c.App.Writer
	deref := func(p *string) string {
		if p == nil {
			return "-"
		}
		return esc(*p)
	}
	fmt.Fprintf(w, "Job #%d  %s  (%s)\n", v.ID, esc(v.Handler), esc(v.Status))
	if v.Stuck != nil {
		fmt.Fprintf(w, "  stuck: %s\n", esc(v.Stuck.Reason))
	}
	fmt.Fprintf(w, "  queue %s, priority %d, attempts %d/%d\n", esc(v.Queue), v.Priority, v.Attempts, v.MaxAttempts)
	fmt.Fprintf(w, "  created %s, available %s, reserved %s by %s\n", v.CreatedAt, v.AvailableAt, deref(v.ReservedAt), deref(v.ReservedBy))
	fmt.Fprintf(w, "  completed %s, failed %s\n", deref(v.CompletedAt), deref(v.FailedAt))
	fmt.Fprintf(w, "  workflow %s, step %s, depends on %s\n", orDash(v.WorkflowID), orDash(v.StepIndex), orDash(v.DependsOn))
	fmt.Fprintf(w, "  concurrency group %s (limit %s), session %s\n", deref(v.ConcurrencyGroup), orDash(v.ConcurrencyLimit), deref(v.SessionID))
	if v.ErrorMessage != nil {
		fmt.Fprintf(w, "  error: %s\n", esc(*v.ErrorMessage))
	}
	var pretty any
	if err := json.Unmarshal(v.Payload, &pretty); err == nil {
		b, _ := json.MarshalIndent(pretty, "  ", "  ")
		fmt.Fprintf(w, "  payload: %s\n", b)
	}
	if len(v.Logs) > 0 {
		fmt.Fprintln(w, "  log:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, l := range v.Logs {
			att := "-"
			if l.Attempt != nil {
				att = fmt.Sprint(*l.Attempt)
			}
			fmt.Fprintf(tw, "    %s\t%s\tattempt %s\t%s\t\n", l.CreatedAt, esc(l.Event), att, deref(l.ErrorMessage))
		}
		return tw.Flush()
	}
	return nil
}
