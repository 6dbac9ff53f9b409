package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	store "github.com/queuety-go/queuety/sql"
)

// DevDSN is where `queuety dev` goes without --dsn: the local MariaDB of
// this project's machines.
const DevDSN = "root@tcp(127.0.0.1:3306)/queuety_dev"

func (a *app) devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "quick start: create a local database, migrate, dispatch demo jobs and workflows, run a worker with the dashboard",
		Description: `Uses --dsn (or QUEUETY_DSN, --wp-config), or ` + DevDSN + ` (created if
missing). The demo jobs include a few that fail and are buried on purpose, so
dev refuses a database holding rows it did not write (a site's jobs, say)
unless --yes; a database it filled before is marked in ` + markerTable + `, and
` + DevDSN + ` is its own.
Besides the plain jobs, dev dispatches demo workflows (a research run, an
editorial run waiting for it and then for an approval, syntheses waiting
with All, Any and Quorum, a brief starting three agents and waiting for a
quorum of two, a local activity) and a job bound to a worker session, and
serves the dashboard and /metrics on --listen (a free loopback port by
default): it prints the URL, the operator token to log in with and how to
scrape /metrics with it (--metrics-listen serves /metrics without a token
too). It prints the progress when it changes, at most once a second, and
the URL and token again every 20 progress lines, so they stay in view;
Ctrl-C stops it gracefully.

   queuety dev --demo-jobs 100 --exit-when-drained

Meanwhile, from another shell:

   queuety --dsn '` + DevDSN + `' dispatch queuety.sleep --payload '{"ms":200}'
   queuety --dsn '` + DevDSN + `' status`,
		Flags: append(workerFlags(),
			&cli.IntFlag{Name: "demo-jobs", Value: 40, Usage: "demo jobs to dispatch at start"},
			&cli.BoolFlag{Name: "exit-when-drained", Usage: "stop once no job is pending or processing"},
			&cli.BoolFlag{Name: "yes", Usage: "add the demo jobs even to a database holding rows dev did not write"},
			&cli.BoolFlag{Name: "demo-workflows", Value: true, Usage: "also dispatch the demo workflows and the worker-session job"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "serve the dashboard (and the HTTP API) on this loopback `address`; port 0 picks a free one"},
			&cli.BoolFlag{Name: "no-ui", Usage: "do not serve the dashboard"},
			&cli.StringFlag{Name: "operator-token", EnvVars: []string{"QUEUETY_OPERATOR_TOKEN"}, DefaultText: "a random one, printed", Usage: "the dashboard's login token"},
			metricsListenFlag(),
		),
		Action: func(c *cli.Context) error {
			cfg, err := baseConfig(c)
			if err != nil {
				return err
			}
			// DevDSN's database is dev's own by its name: rows there
			// are demo jobs, marked or not (older versions left none).
			ownDB := cfg.DSN == ""
			if ownDB {
				cfg.DSN = DevDSN
			}
			if err := workerConfig(c, &cfg); err != nil {
				return err
			}
			if !c.Bool("no-ui") {
				if err := checkDevListen(c.String("listen")); err != nil {
					return err
				}
			}
			if !c.IsSet("concurrency") {
				cfg.Concurrency = 8
			}
			demoWorkflows := c.Bool("demo-workflows")
			if demoWorkflows {
				cfg.Workflows = true
				registerDemo(a.reg)
			}
			obs, err := newObservability(c, &cfg, true)
			if err != nil {
				return err
			}
			client, rep, err := openLocal(c, cfg, "dev", c.Bool("yes") || ownDB)
			if err != nil {
				return devRefusal(err)
			}
			defer client.Close()
			out := c.App.Writer
			if rep.Changed() {
				fmt.Fprintf(out, "migrated: %d tables created, %d columns and %d indexes added\n", len(rep.CreatedTables), len(rep.AddedColumns), len(rep.AddedIndexes))
			}
			if err := dispatchDemo(c.Context, client, cfg.Queues[0], c.Int("demo-jobs")); err != nil {
				return err
			}
			fmt.Fprintf(out, "dispatched %d demo jobs to queue %q\n", c.Int("demo-jobs"), cfg.Queues[0])
			if demoWorkflows {
				n, err := dispatchDemoWorkflows(c.Context, client, cfg.Queues[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "dispatched %d demo workflows and a worker-session job\n", n)
			}
			w, err := client.NewWorker(a.reg)
			if err != nil {
				return err
			}
			ctx, stop := notifyContext(c.Context)
			defer stop()
			obs.attach(client, w)
			if err := w.Start(ctx); err != nil {
				return err
			}
			console := &devConsole{out: out}
			if !c.Bool("no-ui") {
				srv, banner, err := startDevUI(ctx, client, a.reg, w, c.String("listen"), c.String("operator-token"), obs)
				if err != nil {
					_ = w.Stop(context.Background())
					return err
				}
				defer func() { _ = srv.Stop(context.Background()) }()
				fmt.Fprint(out, banner)
				console.banner = banner
			}
			if err := obs.startListener(ctx, c.App.ErrWriter, "dev"); err != nil {
				_ = w.Stop(context.Background())
				return err
			}
			defer obs.stopListener()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for done := false; !done; {
				select {
				case <-ctx.Done():
					done = true
				case <-tick.C:
					pending, processing, line, err := progress(ctx, client)
					if err != nil {
						fmt.Fprintln(c.App.ErrWriter, "status:", err)
						continue
					}
					st := w.Stats()
					console.progress(time.Now(), fmt.Sprintf("%s | worker: %d completed, %d retried, %d buried, %d running", line, st.Completed, st.Retried, st.Buried, st.Running))
					if done = c.Bool("exit-when-drained") && pending == 0 && processing == 0; done && demoWorkflows {
						n, err := workflowsUnsettled(ctx, client)
						done = err == nil && n == 0
					}
				}
			}
			if err := w.Stop(context.Background()); err != nil {
				return err
			}
			fmt.Fprintln(out, "worker stopped")
			return nil
		},
	}
}

// devRefusal explains why dev will not put demo jobs (some failing on
// purpose) into a database holding rows it did not write.
func devRefusal(err error) error {
	var fr errForeignRows
	if !errors.As(err, &fr) {
		return err
	}
	return usagef("%v that dev did not write; dev adds demo jobs, some failing and buried on purpose: pass --yes to add them anyway, or point --dsn at another database (without --dsn, QUEUETY_DSN or --wp-config dev uses %s)", err, DevDSN)
}

// dispatchDemo queues a mix of jobs: sleeps of various lengths and
// priorities, and a few that fail and retry once before being buried.
func dispatchDemo(ctx context.Context, client *queuety.Client, queue string, n int) error {
	for i := 0; i < n; i++ {
		handler, payload := builtins.Sleep, map[string]any{"ms": 100 + rand.IntN(900), "demo": i}
		opts := []queuety.DispatchOption{queuety.OnQueue(queue), queuety.WithPriority(queuety.Priority(rand.IntN(4)))}
		if i%10 == 9 {
			handler, payload = builtins.Fail, map[string]any{
				"message":           fmt.Sprintf("demo failure %d", i),
				"__queuety_runtime": map[string]any{"max_attempts": 2, "backoff": []int{1}},
			}
		}
		if _, err := client.Dispatch(ctx, handler, payload, opts...); err != nil {
			return err
		}
	}
	return nil
}

func progress(ctx context.Context, client *queuety.Client) (pending, processing int, line string, err error) {
	stats, err := client.Stats(ctx)
	if err != nil {
		return 0, 0, "", err
	}
	counts := map[string]int{}
	for _, s := range stats {
		for k, v := range s.Counts {
			counts[k] += v
		}
	}
	line = fmt.Sprintf("pending %d, processing %d, completed %d, buried %d",
		counts[store.StatusPending], counts[store.StatusProcessing], counts[store.StatusCompleted], counts[store.StatusBuried])
	return counts[store.StatusPending], counts[store.StatusProcessing], line, nil
}
