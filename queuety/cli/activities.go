package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// activitiesCommand prints the local activity metrics (operator metrics'
// activities.*), local beside queued.
func (a *app) activitiesCommand() *cli.Command {
	return &cli.Command{
		Name:  "activities",
		Usage: "show local and queued activity counts (activities.local, local_open, local_attempts, ...)",
		Description: `Counts local activity executions and attempts (workflow steps of type
local_activity, run in the worker that advanced the workflow) beside queued
activities: workflow step jobs with a real handler that go through the queue
(__queuety_* placeholders excluded), pending or processing; plain jobs are
shown apart. With --json the keys are durable-workflow's activities.* names.

   queuety activities
   queuety activities --json`,
		Flags: []cli.Flag{jsonFlag()},
		Action: withClient(nil, func(c *cli.Context, client *queuety.Client) error {
			m, err := client.ActivityMetrics(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, m)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			rows := []struct {
				k string
				v int64
			}{
				{"local", m.Local}, {"local_open", m.LocalOpen}, {"local_pending", m.LocalPending},
				{"local_running", m.LocalRunning}, {"local_completed", m.LocalCompleted}, {"local_failed", m.LocalFailed},
				{"local_cancelled", m.LocalCancelled}, {"local_attempts", m.LocalAttempts},
				{"local_failed_attempts", m.LocalFailedAttempts}, {"queued_open", m.QueuedOpen},
				{"queued_pending", m.QueuedPending}, {"queued_running", m.QueuedRunning},
				{"queued_failed_attempts", m.QueuedFailedAttempts}, {"jobs_pending", m.JobsPending},
				{"jobs_running", m.JobsRunning},
			}
			for _, r := range rows {
				fmt.Fprintf(tw, "activities.%s\t%d\n", r.k, r.v)
			}
			return tw.Flush()
		}),
	}
}
