package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	store "github.com/queuety-go/queuety/sql"
)

func (a *app) migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "create missing Queuety tables and add queuety-go's extensions (idempotent)",
		Description: fmt.Sprintf(`Creates the tables that are missing: the %d of
the Queuety plugin, with the plugin's own DDL, and the %d of queuety-go's own
(workers, sessions, local activities); then adds queuety-go's extensions (a
reserved_by column, a claim index). It never alters or drops what it finds, so
it is safe on a site where the plugin is installed.

   queuety migrate --wp-config /var/www/html/wp-config.php`, len(store.TableSuffixes()), len(store.OwnTableSuffixes())),
		Flags: []cli.Flag{jsonFlag()},
		Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
			rep, err := client.Migrate(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, rep.NonNil())
			}
			if !rep.Changed() {
				fmt.Fprintln(c.App.Writer, "Schema up to date.")
				return nil
			}
			for _, t := range rep.CreatedTables {
				fmt.Fprintln(c.App.Writer, "created table", t)
			}
			for _, x := range rep.AddedColumns {
				fmt.Fprintln(c.App.Writer, "added column", x)
			}
			for _, x := range rep.AddedIndexes {
				fmt.Fprintln(c.App.Writer, "added index", x)
			}
			return nil
		}),
	}
}

func (a *app) dispatchCommand() *cli.Command {
	return &cli.Command{
		Name:            "dispatch",
		Usage:           "dispatch one job",
		ArgsUsage:       "<handler>",
		HideHelpCommand: true, // `dispatch help` dispatches handler "help"
		Description: `Inserts a job exactly as Queuety's Queue::dispatch does.

   queuety dispatch 'App\Jobs\SendEmail' --payload '{"to":"a@b.c"}' --priority high
   queuety dispatch report --delay 60 --unique --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "payload", Value: "[]", Usage: "payload as a JSON object"},
			&cli.StringFlag{Name: "queue", Value: queuety.DefaultQueue, Usage: "queue to put the job on (at most 64 characters)"},
			&cli.StringFlag{Name: "priority", Value: "0", Usage: "0-3 or low, normal, high, urgent"},
			&cli.DurationFlag{Name: "delay", Usage: "not claimable before this delay: seconds as the plugin takes them (60) or a duration (90s)"},
			&cli.IntFlag{Name: "max-attempts", Value: queuety.DefaultMaxAttempts, Usage: "attempts before the job is buried (1-255)"},
			&cli.BoolFlag{Name: "unique", Usage: "skip if the same handler and payload is pending or processing"},
			&cli.Int64Flag{Name: "after", Usage: "run only after this job id has completed"},
			&cli.StringFlag{Name: "concurrency-group", Usage: "at most --concurrency-limit jobs of this group run at once"},
			&cli.IntFlag{Name: "concurrency-limit", Usage: "limit for --concurrency-group"},
			&cli.IntFlag{Name: "cost-units", Value: 1, Usage: "cost of the job for Queuety's cost budgets"},
			&cli.StringFlag{Name: "session-id", Usage: "bind the job to this worker session: only a worker the session admits claims it"},
			&cli.StringFlag{Name: "session-queue", Usage: "queue the session holder must be registered on (also the job's queue unless --queue is set)"},
			&cli.StringSliceFlag{Name: "session-requirement", Usage: "capability the session holder must advertise (repeatable)"},
			&cli.IntFlag{Name: "session-lease", DefaultText: "120", Usage: "session lease renewal window in seconds"},
			&cli.IntFlag{Name: "session-ttl", DefaultText: "1800", Usage: "absolute session lifetime in seconds"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("dispatch takes one handler name")
			}
			payload, err := phpjson.DecodeString(c.String("payload"))
			if err != nil {
				return usagef("--payload: %v", err)
			}
			if _, ok := payload.AsObject(); !ok {
				return usagef("--payload: must be a JSON object, got %s", payload.Kind())
			}
			prio, err := queuety.ParsePriority(c.String("priority"))
			if err != nil {
				return usagef("--priority: %v", err)
			}
			flagged := []struct {
				flag string
				opt  queuety.DispatchOption
			}{
				{"queue", queuety.OnQueue(c.String("queue"))}, {"priority", queuety.WithPriority(prio)},
				{"delay", queuety.Delay(c.Duration("delay"))}, {"max-attempts", queuety.MaxAttempts(c.Int("max-attempts"))},
			}
			type flaggedOpt = struct {
				flag string
				opt  queuety.DispatchOption
			}
			if c.IsSet("after") {
				flagged = append(flagged, flaggedOpt{"after", queuety.After(c.Int64("after"))})
			}
			if c.IsSet("concurrency-group") || c.IsSet("concurrency-limit") {
				flagged = append(flagged, flaggedOpt{"concurrency-group", queuety.ConcurrencyGroup(c.String("concurrency-group"), c.Int("concurrency-limit"))})
			}
			if c.IsSet("cost-units") {
				flagged = append(flagged, flaggedOpt{"cost-units", queuety.CostUnits(c.Int("cost-units"))})
			}
			if opt, flag, err := sessionDispatchOption(c); err != nil {
				return err
			} else if opt != nil {
				flagged = append(flagged, flaggedOpt{flag, opt})
			}
			if err := queuety.CheckDispatch(c.Args().First()); err != nil {
				return usageError{err}
			}
			var opts []queuety.DispatchOption
			for _, f := range flagged {
				if err := queuety.CheckDispatch(c.Args().First(), f.opt); err != nil {
					if strings.HasPrefix(err.Error(), "handler ") {
						return usageError{err}
					}
					return usagef("--%s: %v", f.flag, err)
				}
				opts = append(opts, f.opt)
			}
			if c.Bool("unique") {
				opts = append(opts, queuety.Unique())
			}
			client, err := connect(c)
			if err != nil {
				return err
			}
			defer client.Close()
			d, err := client.Dispatch(c.Context, c.Args().First(), payload, opts...)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, d)
			}
			if d.Existing {
				fmt.Fprintf(c.App.Writer, "Job #%d already pending (unique).\n", d.ID)
			} else {
				fmt.Fprintf(c.App.Writer, "Dispatched job #%d\n", d.ID)
			}
			return nil
		},
	}
}

func (a *app) recoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "recover",
		Usage: "rescue stale jobs once (for system cron)",
		Description: `Retries processing jobs not heard from for --stale-timeout, or buries them with
"Stale: worker died without completing." when their attempts are used up.
` + "`work`" + ` runs the same sweep on a schedule; use this from cron when it does not.
With --php, a PHP class's settings decide (a Contracts\Job's $tries and $backoff, a
handler's config()), as in the plugin's recover; without it, the row's max_attempts.

   */5 * * * * queuety recover --wp-config /var/www/html/wp-config.php`,
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "stale-timeout", Value: queuety.DefaultStaleTimeout, EnvVars: []string{"QUEUETY_STALE_TIMEOUT"}, Usage: "processing jobs not heard from this long are rescued (a duration, or plain seconds like 600)"},
			workflowsFlag(), noWorkflowsFlag("leave stale workflow steps alone (by default they are rescued too, as the plugin's recover does: burying one at max attempts fails its workflow)"),
			jsonFlag(),
		}, phpFlags()...),
		Action: func(c *cli.Context) error {
			cfg, err := baseConfig(c)
			if err != nil {
				return err
			}
			site, err := applySiteSettings(c)
			if err != nil {
				return err
			}
			if cfg.StaleTimeout = c.Duration("stale-timeout"); cfg.StaleTimeout < time.Second {
				return site.explain(usagef("--stale-timeout %s: the stale timeout must be at least 1s (reserved_at has one-second resolution)", cfg.StaleTimeout))
			}
			if err := site.apply(&cfg); err != nil {
				return err
			}
			if cfg.Workflows, err = workflowsOn(c); err != nil {
				return err
			}
			client, err := open(c, cfg)
			if err != nil {
				return err
			}
			defer client.Close()
			_, stop, err := a.startCommandPool(c) // --php: the classes' settings
			if err != nil {
				return err
			}
			defer stop()
			res, err := client.RecoverStale(c.Context, a.reg)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, res)
			}
			fmt.Fprintf(c.App.Writer, "Recovered %d stale jobs (%d retried, %d buried).\n", res.Retried+res.Buried, res.Retried, res.Buried)
			return nil
		},
	}
}

func (a *app) pauseCommand(pause bool) *cli.Command {
	name, usage := "pause", "pause a queue (PHP and Go workers stop claiming from it)"
	if !pause {
		name, usage = "resume", "resume a paused queue"
	}
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: "<queue>",
		HideHelpCommand: true, // `pause help` pauses queue "help"
		Description:     "   queuety " + name + " emails",
		Flags:           []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("%s takes one queue name", name)
			}
			// The name rules before connecting: a usage error (exit 2).
			if err := queuety.ValidateQueue(c.Args().First()); err != nil {
				return usagef("%v", err)
			}
			client, err := connect(c)
			if err != nil {
				return err
			}
			defer client.Close()
			q := c.Args().First()
			if pause {
				err = client.Pause(c.Context, q)
			} else {
				err = client.Resume(c.Context, q)
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, struct {
					Queue  string `json:"queue"`
					Paused bool   `json:"paused"`
				}{q, pause})
			}
			fmt.Fprintf(c.App.Writer, "Queue '%s' %sd.\n", esc(q), name)
			return nil
		},
	}
}

func (a *app) statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "job counts per queue and status, and the rows that can never run as they are",
		Description: `Counts jobs per queue and status. Below the table, "Needs attention" lists the
rows that can never run as they are (a depends_on cycle, a missing or buried
dependency, concurrency limit 0, a step job of a missing workflow, a processing
row without reserved_at, a workflow whose definition is corrupt or too short),
per queue and kind, with a few ids; --json puts them under each queue's
"needs_attention". The check reads only the oldest pending jobs, the jobs with
the newest dependencies and the oldest live workflows, so it stays cheap on a
large table.

--queue shows one queue (its counts are zero when it has no job), as the
plugin's status --queue does.

With --network or --sites: one line a site (a site whose database cannot be
reached says why, and status exits 1 naming it); with --site too, this status
of that one site.

   queuety status
   queuety status --queue emails
   queuety status --json | jq '.[] | select(.needs_attention)'
   queuety status --network /var/www/html/wp-config.php
   queuety status --network /var/www/html/wp-config.php --site "blog 3"`,
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "queue", Usage: "only this queue"}, jsonFlag()}, siteFlags(true)...),
		Action: orSitesStatus(withClient(nil, func(c *cli.Context, client *queuety.Client) error {
			stats, err := client.Status(c.Context)
			if err != nil {
				return err
			}
			if c.IsSet("queue") {
				stats = oneQueue(stats, c.String("queue"))
			}
			if stats, err = withUnclaimed(c.Context, client, stats); err != nil {
				return err
			}
			if c.Bool("json") {
				if stats == nil {
					stats = []queuety.QueueStats{}
				}
				return printJSON(c, stats)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "QUEUE\tPENDING\tPROCESSING\tCOMPLETED\tFAILED\tBURIED\t")
			for _, s := range stats {
				name := esc(s.Queue)
				if s.Paused {
					name += " (paused)"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, s.Counts["pending"], s.Counts["processing"],
					s.Counts["completed"], s.Counts["failed"], s.Counts["buried"])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if err := printAttention(c.App.Writer, stats); err != nil {
				return err
			}
			if err := printUnclaimed(c.App.Writer, stats); err != nil {
				return err
			}
			return printClaimRollbacks(c, client)
		})),
	}
}

// oneQueue is the status of queue alone, with zero counts when it has no
// job.
func oneQueue(stats []queuety.QueueStats, queue string) []queuety.QueueStats {
	for _, s := range stats {
		if s.Queue == queue {
			return []queuety.QueueStats{s}
		}
	}
	return []queuety.QueueStats{{Queue: queue, Counts: map[string]int{}}}
}

// printAttention is status's "needs attention" section: per queue and
// kind, how many rows can never run as they are, a few ids and why.
// Nothing is printed when there are none.
func printAttention(w io.Writer, stats []queuety.QueueStats) error {
	total := 0
	for _, s := range stats {
		for _, a := range s.NeedsAttention {
			total += a.Count
		}
	}
	if total == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nNeeds attention: %d rows can never run as they are (queuety job list --stuck):\n", total)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  QUEUE\tKIND\tCOUNT\tIDS\tREASON")
	for _, s := range stats {
		for _, a := range s.NeedsAttention {
			ids := make([]string, len(a.IDs))
			for i, id := range a.IDs {
				ids[i] = fmt.Sprint(id)
			}
			list := a.Table + " " + strings.Join(ids, ", ")
			if a.Count > len(a.IDs) {
				list += ", …"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", esc(s.Queue), a.Kind, a.Count, list, a.Reason)
		}
	}
	return tw.Flush()
}

// jobView is a job as `job inspect --json` prints it.
type jobView struct {
	ID           int64           `json:"id"`
	Queue        string          `json:"queue"`
	Handler      string          `json:"handler"`
	Payload      json.RawMessage `json:"payload"`
	PayloadHash  *string         `json:"payload_hash"`
	Priority     int             `json:"priority"`
	Status       string          `json:"status"`
	Attempts     int             `json:"attempts"`
	MaxAttempts  int             `json:"max_attempts"`
	AvailableAt  string          `json:"available_at"`
	ReservedAt   *string         `json:"reserved_at"`
	CompletedAt  *string         `json:"completed_at"`
	FailedAt     *string         `json:"failed_at"`
	ErrorMessage *string         `json:"error_message"`
	WorkflowID   *int64          `json:"workflow_id"`
	StepIndex    *int64          `json:"step_index"`
	DependsOn    *int64          `json:"depends_on"`
	// ConcurrencyGroup, ConcurrencyLimit, SessionID: what admits the job.
	ConcurrencyGroup *string `json:"concurrency_group"`
	ConcurrencyLimit *int64  `json:"concurrency_limit"`
	SessionID        *string `json:"session_id"`
	// Stuck is set when the job can never run as it is (omitted otherwise).
	Stuck         *stuckView      `json:"stuck,omitempty"`
	HeartbeatData json.RawMessage `json:"heartbeat_data"`
	ReservedBy    *string         `json:"reserved_by"`
	CreatedAt     string          `json:"created_at"`
	Logs          []logView       `json:"logs,omitempty"`
}

// stuckView is why a job can never run as it is.
type stuckView struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

type logView struct {
	ID           int64   `json:"id"`
	Event        string  `json:"event"`
	Attempt      *int64  `json:"attempt"`
	DurationMS   *int64  `json:"duration_ms"`
	ErrorMessage *string `json:"error_message"`
	ErrorClass   *string `json:"error_class"`
	CreatedAt    string  `json:"created_at"`
}

// printClaimRollbacks is status's line about claims the server rolled
// back, summed over the live workers' heartbeats: on a cluster, a share
// above a percent or so means the daemons claim the same rows (see
// docs/clusters.md). Nothing is printed before any worker claimed.
func printClaimRollbacks(c *cli.Context, client *queuety.Client) error {
	m, err := client.ClaimRollbacks(c.Context, "")
	if err != nil || m.Rounds == 0 {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "\nClaims rolled back by the server (live workers): %d of %d claim rounds (%.2f%%)\n",
		m.RolledBack, m.Rounds, 100*float64(m.RolledBack)/float64(m.Rounds))
	return err
}
