package cli

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// A site's system cron runs the plugin's worker as `wp queuety work --once`
// or `wp queuety flush`; these flags give `work` the same exits, and
// `flush` is work that stops once nothing it can claim is left.

func runLimitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "once", Usage: "run one job (none when nothing is due), then exit, as wp queuety work --once"},
		&cli.IntFlag{Name: "max-jobs", Usage: "claim this many jobs in all, exit once they are done (0: no limit)"},
		&cli.DurationFlag{Name: "max-time", Usage: "stop claiming after this long and exit once running jobs finish, as on SIGTERM (0: no limit)"},
		&cli.BoolFlag{Name: "stop-when-empty", Usage: "exit 0 once nothing this worker can claim is due (for system cron); delayed jobs do not count"},
		jsonFlag(),
	}
}

// runLimits are the exits of one `work` or `flush` run.
type runLimits struct {
	stopWhenEmpty bool
	maxJobs       int
	maxTime       time.Duration
	poll          time.Duration
}

func (l runLimits) any() bool { return l.stopWhenEmpty || l.maxJobs > 0 || l.maxTime > 0 }

// readRunLimits reads the exit flags into cfg.MaxJobs and the limits.
func readRunLimits(c *cli.Context, cfg *queuety.Config) (runLimits, error) {
	l := runLimits{
		stopWhenEmpty: c.Bool("stop-when-empty") || c.Bool("once") || c.Command.Name == "flush",
		maxJobs:       c.Int("max-jobs"),
		maxTime:       c.Duration("max-time"),
		poll:          min(cfg.PollInterval, 50*time.Millisecond),
	}
	switch {
	case l.maxJobs < 0:
		return l, usagef("--max-jobs %d: must not be negative (0: no limit)", l.maxJobs)
	case l.maxTime < 0:
		return l, usagef("--max-time %s: must not be negative (0: no limit)", l.maxTime)
	case c.Bool("once") && c.IsSet("max-jobs"):
		return l, usagef("--once and --max-jobs: --once is --max-jobs 1 --stop-when-empty, pick one")
	case c.Bool("once"):
		l.maxJobs = 1
		// The plugin's run(once) never ticks the schedules (its loop does,
		// every 60 s): a one-job run leaves them to the long-running workers.
		if !c.IsSet("schedule-interval") {
			cfg.ScheduleInterval = -1
		}
	}
	if l.poll <= 0 {
		l.poll = queuety.DefaultPollInterval
	}
	cfg.MaxJobs = l.maxJobs
	// The plugin's once-run time budget (ResourceManager::admit): a job
	// whose handler's usual duration would not end in time is left for a
	// later run. Its window is the once-run's max_execution_time; --max-time
	// is this run's own.
	switch {
	case l.maxTime > 0:
		cfg.TimeBudget = l.maxTime
	case c.Bool("once"):
		cfg.TimeBudget = cfg.JobTimeout
	}
	if l.maxJobs > 0 {
		// A chained step runs without a claim, so it would not count:
		// every step goes through the claim, one job each, as in PHP.
		cfg.WorkflowChainSteps = -1
	}
	return l, nil
}

// stopReason is why a limited run ended.
type stopReason struct{ atomic.Value }

func (r *stopReason) set(why string) { r.CompareAndSwap(nil, why) }

func (r *stopReason) String() string {
	if v, ok := r.Load().(string); ok {
		return v
	}
	return "signal"
}

// watch ends the returned context when a limit is reached: the worker is
// drained (--stop-when-empty, --once, flush), took its --max-jobs and
// finished them, or ran --max-time. The stop is then the graceful one of
// SIGTERM.
func (l runLimits) watch(ctx context.Context, w *queuety.Worker, why *stopReason) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if !l.any() {
		return ctx, cancel
	}
	go func() {
		tick := time.NewTicker(l.poll)
		defer tick.Stop()
		var deadline <-chan time.Time
		if l.maxTime > 0 {
			t := time.NewTimer(l.maxTime)
			defer t.Stop()
			deadline = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				why.set("max-time")
				cancel()
				return
			case <-tick.C:
				switch {
				case l.maxJobs > 0 && w.BudgetSpent():
					why.set("max-jobs")
				case l.stopWhenEmpty && w.Drained():
					why.set("empty")
				default:
					continue
				}
				cancel()
				return
			}
		}
	}()
	return ctx, cancel
}

// runSummary is what a limited run prints at its end.
type runSummary struct {
	Processed int64  `json:"processed"`
	Completed int64  `json:"completed"`
	Retried   int64  `json:"retried"`
	Buried    int64  `json:"buried"`
	Stopped   string `json:"stopped"` // empty, max-jobs, max-time or signal
}

func printRunSummary(c *cli.Context, w *queuety.Worker, why *stopReason) error {
	st := w.Stats()
	s := runSummary{Completed: st.Completed, Retried: st.Retried, Buried: st.Buried, Stopped: why.String()}
	s.Processed = s.Completed + s.Retried + s.Buried
	if c.Bool("json") {
		return printJSON(c, s)
	}
	if c.Command.Name == "flush" {
		fmt.Fprintf(c.App.Writer, "Flushed %d jobs.\n", s.Processed)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "Worker stopped (%s): %d jobs (%d completed, %d retried, %d buried).\n",
		s.Stopped, s.Processed, s.Completed, s.Retried, s.Buried)
	return nil
}

// flushCommand is `work` that exits once the queues are drained, as the
// plugin's `wp queuety flush`.
func (a *app) flushCommand() *cli.Command {
	cmd := a.workCommand()
	cmd.Name = "flush"
	cmd.Usage = "run every job due now on the queues, then exit (wp queuety flush)"
	cmd.Description = `Claims and runs what this worker can run on --queue (in order) until nothing
claimable is due, then stops as on SIGTERM and prints how many jobs it ran. Jobs
delayed into the future (a retry's backoff) are left for later, as in the plugin.
Takes the flags of work; flush is work --stop-when-empty.

   queuety flush --wp-config /var/www/html/wp-config.php --queue critical,default`
	return cmd
}
