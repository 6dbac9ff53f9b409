package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// BenchLocalClass is the noop step (and local activity) `bench
// local-activities` runs.
const BenchLocalClass = "QueuetyBench\\LocalNoop"

// LocalBenchResult is what `bench local-activities --json` prints: end to
// end times (dispatch to workflow completed) of the same workflow with
// queued steps and with local activities, in milliseconds.
type LocalBenchResult struct {
	Runs         int     `json:"runs"`
	Steps        int     `json:"steps"`
	QueuedP50ms  float64 `json:"queued_p50_ms"`
	QueuedMeanms float64 `json:"queued_mean_ms"`
	LocalP50ms   float64 `json:"local_p50_ms"`
	LocalMeanms  float64 `json:"local_mean_ms"`
	Ratio        float64 `json:"ratio"` // queued p50 / local p50
	QueuedClaims int64   `json:"queued_claims_per_workflow"`
	LocalClaims  int64   `json:"local_claims_per_workflow"`
	// Chained: the queued workflow again with chained steps (the worker's
	// default, internal/engine/chain.go), where a step is enqueued already
	// claimed by the worker that ran the one before; the queued figures
	// above have every step claimed (--chain-steps -1).
	ChainedP50ms  float64 `json:"chained_p50_ms"`
	ChainedMeanms float64 `json:"chained_mean_ms"`
	ChainedRatio  float64 `json:"chained_ratio"` // chained p50 / local p50
	ChainedClaims int64   `json:"chained_claims_per_workflow"`
	// Concurrent mode (--concurrent N > 1): N workflows dispatched at
	// once, each timed from its dispatch to its completion.
	Concurrent int `json:"concurrent"`
	// CPU per workflow of each mode, warm-up runs included.
	QueuedCPU    CPUCost `json:"queued_cpu"`
	ChainedCPU   CPUCost `json:"chained_cpu"`
	LocalCPU     CPUCost `json:"local_cpu"`
	PollInterval string  `json:"poll_interval"`
	Server       string  `json:"server"`
}

func (a *app) benchLocalCommand() *cli.Command {
	return &cli.Command{
		Name:  "local-activities",
		Usage: "time one workflow of N local-activity steps against the same workflow of queued steps",
		Description: `Runs --runs workflows one at a time, each of --steps noop steps, first as
ordinary queued steps (then()) every one of them claimed (--chain-steps -1),
on a worker of their own; then, on one worker with the default chaining
(a step enqueued already claimed by the worker that ran the one before),
the same workflow with chained steps and as local activities
(local_activity), taking turns (chained then local, then local then
chained, ...) so that both see the machine alike. Each workflow is timed
from dispatch to the workflow row being completed (polled every
millisecond). Prints the median and mean of each, the ratios to local
(medians) and the claims each workflow needed: all of its steps when
claimed, only the first when chained or local (the rest run in the worker
that committed the step before, without a claim).

The first step of both is claimed after dispatch, so --poll-interval (the
worker's idle wait) is part of both figures; 5ms keeps it small.

` + benchHelp + `

   queuety bench local-activities
   queuety bench local-activities --runs 50 --steps 10 --json`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "runs", Value: 30, Usage: "workflows per mode (run one after the other)"},
			&cli.IntFlag{Name: "steps", Value: 10, Usage: "steps per workflow (1-100)"},
			&cli.IntFlag{Name: "concurrent", Value: 1, Usage: "workflows in flight at once: 1 times them one after the other; N > 1 dispatches N at once per run and times each"},
			jsonFlag(),
		}, &cli.IntFlag{Name: "concurrency", Value: 4, Usage: "worker slots"},
			&cli.DurationFlag{Name: "poll-interval", Value: 5 * time.Millisecond, Usage: "idle wait between claims (at least 5ms)"},
			benchDSNFlag(), cpuProfileFlag()),
		Action: a.benchLocal,
	}
}

func (a *app) benchLocal(c *cli.Context) error {
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	runs, steps := c.Int("runs"), c.Int("steps")
	if runs < 1 || steps < 1 || steps > 100 || c.Int("concurrency") < 1 {
		return usagef("--runs and --concurrency must be positive, --steps between 1 and 100")
	}
	cfg.Workflows = true
	queued, local := workflow.New("bench-queued"), workflow.New("bench-local")
	for range steps {
		queued.Then(BenchLocalClass)
		local.LocalActivity(BenchLocalClass, workflow.LocalActivityOptions{})
	}
	res := LocalBenchResult{Runs: runs, Steps: steps, PollInterval: c.Duration("poll-interval").String()}
	conc := max(1, c.Int("concurrent"))
	res.Concurrent = conc
	stopProfile, err := startCPUProfile(c)
	if err != nil {
		return err
	}
	defer stopProfile()
	// Every step claimed needs a worker that chains nothing; chained and
	// local steps share one worker and take turns, workflow by workflow,
	// so that a machine whose speed drifts during the run (a small VM
	// does) moves both figures alike.
	queuedOnly, err := a.timeLocalModes(c, cfg, -1, runs, conc, queued)
	if err != nil {
		return err
	}
	both, err := a.timeLocalModes(c, cfg, queuety.DefaultWorkflowChainSteps, runs, conc, queued, local)
	if err != nil {
		return err
	}
	res.Server = both[0].server
	q, ch, lo := queuedOnly[0], both[0], both[1]
	res.QueuedP50ms, res.QueuedMeanms, res.QueuedClaims, res.QueuedCPU = q.p50, q.mean, q.claims, q.cpu
	res.ChainedP50ms, res.ChainedMeanms, res.ChainedClaims, res.ChainedCPU = ch.p50, ch.mean, ch.claims, ch.cpu
	res.LocalP50ms, res.LocalMeanms, res.LocalClaims, res.LocalCPU = lo.p50, lo.mean, lo.claims, lo.cpu
	res.Ratio = res.QueuedP50ms / res.LocalP50ms
	res.ChainedRatio = res.ChainedP50ms / res.LocalP50ms
	if c.Bool("json") {
		return printJSON(c, res)
	}
	fmt.Fprintf(c.App.Writer, "workflow of %d steps, %d runs of %d workflow(s) at once per mode, dispatch to completed (MariaDB %s, poll %s):\n",
		steps, runs, conc, res.Server, res.PollInterval)
	fmt.Fprintf(c.App.Writer, "  queued steps:      p50 %7.2f ms  mean %7.2f ms  (%d claims per workflow)\n", res.QueuedP50ms, res.QueuedMeanms, res.QueuedClaims)
	fmt.Fprintf(c.App.Writer, "  chained steps:     p50 %7.2f ms  mean %7.2f ms  (%d claims per workflow)\n", res.ChainedP50ms, res.ChainedMeanms, res.ChainedClaims)
	fmt.Fprintf(c.App.Writer, "  local activities:  p50 %7.2f ms  mean %7.2f ms  (%d claims per workflow)\n", res.LocalP50ms, res.LocalMeanms, res.LocalClaims)
	fmt.Fprintf(c.App.Writer, "  ratio (queued/local, p50): %.2fx; chained/local: %.2fx\n", res.Ratio, res.ChainedRatio)
	for _, m := range []struct {
		name string
		cpu  CPUCost
	}{{"queued", res.QueuedCPU}, {"chained", res.ChainedCPU}, {"local", res.LocalCPU}} {
		fmt.Fprintf(c.App.Writer, "  %-8s %s\n", m.name+":", m.cpu)
	}
	return nil
}

// modeTimes is what timeLocalModes measured of one workflow definition.
type modeTimes struct {
	p50, mean float64 // ms, dispatch to completed
	claims    int64   // per workflow
	cpu       CPUCost // per workflow, warm-up runs included
	server    string
}

// timeLocalModes runs runs+2 rounds (two warm-ups) on one worker with
// chainSteps; a round dispatches conc workflows of each builder in turn
// and waits for them before the next builder's, the builders' order
// reversed every other round. Each builder gets its own times, claims and
// CPU.
func (a *app) timeLocalModes(c *cli.Context, cfg queuety.Config, chainSteps, runs, conc int, builders ...*workflow.Builder) ([]modeTimes, error) {
	cfg.WorkflowChainSteps = chainSteps
	client, done, err := openBench(c, cfg)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := clientstore.Of(client).TruncateActivities(c.Context); err != nil {
		return nil, err
	}
	reg := queuety.NewRegistry()
	reg.RegisterStep(BenchLocalClass, func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return phpjson.NewObject(), nil
	})
	w, err := client.NewWorker(reg)
	if err != nil {
		return nil, err
	}
	if err := w.Start(c.Context); err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop(context.Background()) }()
	out := make([]modeTimes, len(builders))
	ms := make([][]float64, len(builders))
	cpu := make([]cpuSum, len(builders))
	claims := make([]int64, len(builders))
	for i := -2; i < runs; i++ { // two warm-up rounds
		for k := range builders {
			if i%2 != 0 {
				k = len(builders) - 1 - k
			}
			meter := startCPU(c.Context, clientstore.Of(client))
			claimed := w.Stats().Claimed
			started := map[int64]time.Time{}
			for j := range conc {
				d, err := builders[k].Build(phpjson.NewObject().Set("i", phpjson.Int(int64((i+2)*conc+j))))
				if err != nil {
					return nil, err
				}
				t0 := time.Now()
				id, _, err := client.DispatchWorkflow(c.Context, d)
				if err != nil {
					return nil, err
				}
				started[id] = t0
			}
			took, err := awaitWorkflows(c.Context, client, started, time.Minute)
			if err != nil {
				return nil, err
			}
			cpu[k].add(meter)
			claims[k] += w.Stats().Claimed - claimed
			if i >= 0 {
				ms[k] = append(ms[k], took...)
			}
		}
	}
	n := (runs + 2) * conc
	for k := range builders {
		slices.Sort(ms[k])
		sum := 0.0
		for _, v := range ms[k] {
			sum += v
		}
		out[k] = modeTimes{p50: ms[k][len(ms[k])/2], mean: sum / float64(len(ms[k])), claims: claims[k] / int64(n),
			cpu: cpu[k].per(n, "workflow"), server: client.Server().Version}
	}
	return out, nil
}

// awaitWorkflows polls the workflows' statuses every millisecond until all
// are completed and returns each one's time from dispatch to the poll that
// saw it completed, in ms; any other terminal status is an error.
func awaitWorkflows(ctx context.Context, client *queuety.Client, started map[int64]time.Time, limit time.Duration) ([]float64, error) {
	deadline := time.Now().Add(limit)
	open := make([]int64, 0, len(started))
	for id := range started {
		open = append(open, id)
	}
	var out []float64
	for len(open) > 0 {
		st, err := clientstore.Of(client).WorkflowStatuses(ctx, open)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		still := open[:0]
		for _, id := range open {
			switch st[id] {
			case "completed":
				out = append(out, float64(now.Sub(started[id]).Microseconds())/1000)
			case "failed", "cancelled":
				return nil, fmt.Errorf("bench workflow %d ended %s (see the log)", id, st[id])
			default:
				still = append(still, id)
			}
		}
		open = still
		if now.After(deadline) {
			return nil, fmt.Errorf("%d bench workflows not completed after %s", len(open), limit)
		}
		time.Sleep(time.Millisecond)
	}
	return out, nil
}
