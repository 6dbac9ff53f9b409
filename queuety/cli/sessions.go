package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/sessions"
	"github.com/queuety-go/queuety/queuety"
)

func namespaceFlag() cli.Flag {
	return &cli.StringFlag{Name: "namespace", Value: queuety.DefaultNamespace, EnvVars: []string{"QUEUETY_NAMESPACE"}, Usage: "namespace of the worker registrations and sessions"}
}

func (a *app) sessionCommand() *cli.Command {
	return &cli.Command{
		Name:  "session",
		Usage: "inspect and close worker sessions",
		Description: `Worker sessions pin session-bound steps and jobs to one worker holding a local
resource (a GPU, a mount, a warm cache). Statuses are refreshed before every
read: a lapsed lease or TTL shows as expired, a stale owner as orphaned.

   queuety session list --json
   queuety session show gpu-render
   queuety session close gpu-render`,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the sessions with per-state counts",
				Description: `   queuety session list
   queuety session list --namespace default --json`,
				Flags: []cli.Flag{namespaceFlag(), jsonFlag()},
				Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
					v, err := sessionRegistry(client).List(c.Context, c.String("namespace"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, v)
					}
					m := v.Metrics
					fmt.Fprintf(c.App.Writer, "%d sessions: %d active, %d closed, %d expired, %d failed, %d orphaned\n",
						m.Total, m.Active, m.Closed, m.Expired, m.Failed, m.Orphaned)
					if len(v.Sessions) == 0 {
						return nil
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 2, 2, ' ', 0)
					fmt.Fprintln(tw, "SESSION\tSTATUS\tOWNER\tQUEUE\tREQUIREMENTS\tLEASE EXPIRES\tTTL EXPIRES\tACTIVE")
					for _, s := range v.Sessions {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", esc(s.SessionID), esc(statusWithReason(s)), esc(orDash(s.LeaseOwner)),
							esc(orDash(s.Queue)), esc(dashIfEmpty(strings.Join(s.Requirements, ","))), timeOrDash(s.LeaseExpiresAt),
							timeOrDash(s.TTLExpiresAt), s.ActiveActivityCount)
					}
					return tw.Flush()
				}),
			},
			{
				Name:        "show",
				Usage:       "show one session",
				ArgsUsage:   "<session-id>",
				Description: "   queuety session show gpu-session-1 --json",
				Flags:       []cli.Flag{namespaceFlag(), jsonFlag()},
				Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
					id, err := sessionArg(c)
					if err != nil {
						return err
					}
					s, err := sessionRegistry(client).Get(c.Context, c.String("namespace"), id)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, s)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 2, 2, ' ', 0)
					for _, kv := range [][2]string{
						{"session", s.SessionID}, {"status", statusWithReason(s)}, {"owner", orDash(s.LeaseOwner)},
						{"queue", orDash(s.Queue)}, {"connection", orDash(s.Connection)},
						{"requirements", dashIfEmpty(strings.Join(s.Requirements, ", "))},
						{"lease", fmt.Sprintf("%ds, expires %s", s.LeaseSeconds, timeOrDash(s.LeaseExpiresAt))},
						{"ttl", fmt.Sprintf("%ds, expires %s", s.TTLSeconds, timeOrDash(s.TTLExpiresAt))},
						{"activities", fmt.Sprintf("%d running, at most %d", s.ActiveActivityCount, s.MaxConcurrentActivities)},
						{"last heartbeat", timeOrDash(s.LastHeartbeatAt)}, {"closed", timeOrDash(s.ClosedAt)},
					} {
						fmt.Fprintf(tw, "%s:\t%s\n", kv[0], esc(kv[1]))
					}
					return tw.Flush()
				}),
			},
			{
				Name:      "close",
				Usage:     "close a session for good (its id can never be used again)",
				ArgsUsage: "<session-id>",
				Description: `Closes the session as its owner would: close is terminal, so later jobs bound
to this session id are refused (session_closed). Running jobs finish under
their own leases.

   queuety session close gpu-session-1`,
				Flags: []cli.Flag{namespaceFlag(), jsonFlag()},
				Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
					id, err := sessionArg(c)
					if err != nil {
						return err
					}
					ns, sr := c.String("namespace"), sessionRegistry(client)
					s, err := sr.Get(c.Context, ns, id)
					if err != nil {
						return err
					}
					owner := ""
					if s.LeaseOwner != nil {
						owner = *s.LeaseOwner
					}
					res, err := sr.Close(c.Context, ns, id, owner)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, res)
					}
					if !res.Admitted {
						return fmt.Errorf("session %q not closed: %s (%s)", id, res.Error, res.Reason)
					}
					fmt.Fprintf(c.App.Writer, "Session %s %s.\n", esc(id), strings.ReplaceAll(res.Outcome, "_", " "))
					return nil
				}),
			},
		},
	}
}

func (a *app) workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "inspect worker registrations",
		Subcommands: []*cli.Command{{
			Name:  "list",
			Usage: "list registered workers, their capabilities and whether they are stale",
			Description: `Every queuety work process registers itself (worker id, queues, --capability
strings, --max-worker-sessions) and heartbeats; external workers register over
HTTP. A registration not heard from within --worker-stale-after is stale.

   queuety worker list --json`,
			Flags: []cli.Flag{namespaceFlag(), jsonFlag()},
			Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
				ws, err := client.Workers(c.Context, c.String("namespace"))
				if err != nil {
					return err
				}
				if c.Bool("json") {
					if ws == nil {
						ws = []sessions.Worker{}
					}
					return printJSON(c, ws)
				}
				if len(ws) == 0 {
					fmt.Fprintln(c.App.Writer, "No workers registered.")
					return nil
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 2, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKER\tRUNTIME\tQUEUES\tCAPABILITIES\tMAX SESSIONS\tLAST HEARTBEAT\tSTALE")
				for _, w := range ws {
					limit := "-"
					if w.MaxConcurrentWorkerSessions != nil {
						limit = fmt.Sprint(*w.MaxConcurrentWorkerSessions)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%v\n", esc(w.WorkerID), esc(w.Runtime), esc(strings.Join(w.Queues, ",")),
						esc(dashIfEmpty(strings.Join(w.Capabilities, ","))), limit, timeOrDash(w.LastHeartbeatAt), w.IsStale)
				}
				return tw.Flush()
			}),
		}},
	}
}

func sessionArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 || strings.TrimSpace(c.Args().First()) == "" {
		return "", usagef("%s takes one session id", c.Command.FullName())
	}
	return strings.TrimSpace(c.Args().First()), nil
}

func statusWithReason(s sessions.Snapshot) string {
	if s.FailureReason != nil && *s.FailureReason != "" {
		return s.Status + " (" + *s.FailureReason + ")"
	}
	return s.Status
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
