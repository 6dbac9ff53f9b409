package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

func (a *app) metricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "per-handler stats from the log rows (wp queuety metrics)",
		Description: `For each handler with completed, failed or buried log rows in the last
--minutes: completions, failures (failed and buried rows), the mean duration of
completions (ms, 2 places), their 95th percentile, and failures / (completions
+ failures), computed as the plugin's Metrics::handler_stats does. (The
Prometheus metrics of a running worker are served by work --metrics-listen.)

   queuety metrics
   queuety metrics --minutes 1440 --json`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "minutes", Value: 60, Usage: "the window, in `minutes`"},
			formatFlag(), jsonFlag(),
		},
		Action: withClient(func(c *cli.Context) error {
			if c.Int("minutes") < 0 {
				return usagef("--minutes %d: must not be negative", c.Int("minutes"))
			}
			return checkFormat(c, false)
		}, func(c *cli.Context, client *queuety.Client) error {
			minutes := c.Int("minutes")
			stats, err := client.HandlerMetrics(c.Context, time.Duration(minutes)*time.Minute)
			if err != nil {
				return err
			}
			if f := c.String("format"); f != "table" && !c.Bool("json") {
				it := items{fields: []string{"handler", "completed", "failed", "avg_ms", "p95_ms", "error_rate"}}
				for _, s := range stats {
					it.add(s.Handler, s.Completed, s.Failed, s.AvgMS, s.P95MS, s.ErrorRate)
				}
				return printItems(c, f, it)
			}
			if c.Bool("json") {
				return printJSON(c, stats)
			}
			if len(stats) == 0 {
				fmt.Fprintf(c.App.Writer, "No metrics data found for the last %d minutes.\n", minutes)
				return nil
			}
			num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HANDLER\tCOMPLETED\tFAILED\tAVG_MS\tP95_MS\tERROR_RATE")
			for _, s := range stats {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", esc(s.Handler), s.Completed, s.Failed, num(s.AvgMS), num(s.P95MS), num(s.ErrorRate))
			}
			return tw.Flush()
		}),
	}
}
