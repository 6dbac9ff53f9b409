package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/machine"
)

// machineStatuses are StateMachineStatus's values.
var machineStatuses = []string{"running", "waiting_event", "completed", "failed", "paused", "cancelled"}

func (a *app) machineCommand() *cli.Command {
	return &cli.Command{
		Name:  "machine",
		Usage: "list, inspect and send events to state machines",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "newest state machines first",
				Description: `   queuety machine list --status waiting_event
   queuety machine list --json | jq '.[].machine_id'`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "status", Usage: strings.Join(machineStatuses, ", ")},
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many machines"},
					jsonFlag(),
				},
				Action: func(c *cli.Context) error {
					if c.Int("limit") < 1 {
						return usagef("--limit %d: must be at least 1", c.Int("limit"))
					}
					if st := c.String("status"); st != "" && !slices.Contains(machineStatuses, st) {
						return usagef("--status %q: want one of %s", st, strings.Join(machineStatuses, ", "))
					}
					client, err := connect(c)
					if err != nil {
						return err
					}
					defer client.Close()
					ms, err := client.Machines(c.Context, c.String("status"), c.Int("limit"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, ms)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tSTATE\tVERSION\tUPDATED")
					for _, m := range ms {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", m.ID, esc(m.Name), m.Status, esc(m.CurrentState),
							esc(deref(m.DefinitionVersion)), m.UpdatedAt.UTC().Format("2006-01-02 15:04:05"))
					}
					return tw.Flush()
				},
			},
			{
				Name:      "status",
				Usage:     "one machine: status, state, the events it accepts and its latest events",
				ArgsUsage: "<machine-id>",
				Description: `   queuety machine status 12
   queuety machine status 12 --events 0 --json`,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "events", Value: 20, Usage: "show this many events of its timeline (0: none)"},
					jsonFlag(),
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usagef("machine status takes one machine id")
					}
					id, err := machineID(c.Args().First())
					if err != nil {
						return err
					}
					if c.Int("events") < 0 {
						return usagef("--events %d: must be 0 or more", c.Int("events"))
					}
					client, err := connect(c)
					if err != nil {
						return err
					}
					defer client.Close()
					m, err := client.Machine(c.Context, id)
					if errors.Is(err, queuety.ErrMachineNotFound) {
						return fmt.Errorf("state machine %d: %w", id, err)
					}
					if err != nil {
						return err
					}
					var events []machine.Event
					if n := c.Int("events"); n > 0 {
						if events, err = client.MachineTimeline(c.Context, id, n); err != nil {
							return err
						}
					}
					if c.Bool("json") {
						return printJSON(c, struct {
							machine.Status
							Events []machine.Event `json:"events,omitempty"`
						}{m, events})
					}
					w := c.App.Writer
					fmt.Fprintf(w, "machine %d (%s): %s in %s\n", m.ID, esc(m.Name), m.Status, esc(m.CurrentState))
					fmt.Fprintf(w, "state: %s\n", esc(string(m.State)))
					fmt.Fprintf(w, "accepts: %s\n", esc(strings.Join(m.AvailableEvents, ", ")))
					if m.CurrentAction != nil {
						fmt.Fprintf(w, "action: %s\n", esc(*m.CurrentAction))
					}
					if m.ErrorMessage != nil {
						fmt.Fprintf(w, "error: %s\n", esc(*m.ErrorMessage))
					}
					if len(events) > 0 {
						tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "ID\tEVENT\tSTATE\tNAME\tHANDLER\tAT")
						for _, e := range events {
							fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Event, esc(e.StateName), esc(deref(e.EventName)),
								esc(deref(e.Handler)), e.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
						}
						return tw.Flush()
					}
					return nil
				},
			},
			{
				Name:      "event",
				Usage:     "send an event to a machine waiting for one (Queuety::machine_event)",
				ArgsUsage: "<machine-id> <event> [payload-json]",
				Description: `The payload's keys not starting with "_" are merged into the machine's state.
A transition's guard classes run in PHP: pass --php (as for work) when the
machine's guards are PHP classes. A refused event is recorded (event_rejected)
and the command exits 1.

   queuety machine event 12 submit '{"approved":true}' --php "php php-bridge/bin/queuety-php-worker --bootstrap app.php"`,
				Flags: append(phpFlags(), jsonFlag()),
				Action: func(c *cli.Context) error {
					if c.NArg() < 2 || c.NArg() > 3 {
						return usagef("machine event takes a machine id, an event name and an optional JSON payload")
					}
					id, err := machineID(c.Args().Get(0))
					if err != nil {
						return err
					}
					event := strings.TrimSpace(c.Args().Get(1))
					if event == "" {
						return usagef("the event name is empty")
					}
					var payload []byte
					if c.NArg() == 3 {
						payload = []byte(c.Args().Get(2))
					}
					phpCfg, usePHP, err := phpPoolConfig(c)
					if err != nil {
						return err
					}
					cfg, err := baseConfig(c)
					if err != nil {
						return err
					}
					client, err := open(c, cfg)
					if err != nil {
						return err
					}
					defer client.Close()
					reg := a.reg
					if usePHP {
						pool, err := startPHPPool(c.Context, phpCfg, cfg.Logger)
						if err != nil {
							return err
						}
						defer stopPHPPool(pool)
						reg.SetFallback(pool)
					}
					err = client.MachineEvent(c.Context, reg, id, event, payload)
					if err != nil && !errors.Is(err, machine.ErrEventRejected) && strings.HasPrefix(err.Error(), "event payload:") {
						return usagef("%v", err)
					}
					if err != nil {
						return err
					}
					m, err := client.Machine(c.Context, id)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, m)
					}
					fmt.Fprintf(c.App.Writer, "machine %d: %s in %s\n", m.ID, m.Status, esc(m.CurrentState))
					return nil
				},
			},
		},
	}
}

func machineID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 || strconv.FormatInt(id, 10) != s {
		return 0, usagef("%q is not a machine id", s)
	}
	return id, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
