package cli

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// WaitBenchResult is what `bench waits --json` prints.
type WaitBenchResult struct {
	Parents      int     `json:"parents"`
	ResumeP50ms  float64 `json:"resume_p50_ms"`
	ResumeP99ms  float64 `json:"resume_p99_ms"`
	ResumeMaxms  float64 `json:"resume_max_ms"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	Server       string  `json:"server"`
	PollInterval string  `json:"poll_interval"`
	// CPU per pair, dispatch included (the pairs are dispatched while the
	// worker runs).
	CPU CPUCost `json:"cpu"`
}

func (a *app) benchWaitsCommand() *cli.Command {
	return &cli.Command{
		Name:  "waits",
		Usage: "measure how soon a waiting parent resumes after its dependency completes",
		Description: `Dispatches --count pairs: a child workflow whose one step sleeps --child-ms
plus up to --spread (so the children finish spread out, not in one burst),
and a parent that waits for it (wait_for_workflow) and then runs one step.
The parent parks before the child finishes, so every resume is a real
wake-up. Prints the time from the end of the child's step to the start of the
parent's next step, p50 and p99, measured in the one worker that runs both.

` + benchHelp + `

   queuety bench waits --count 200`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 200, Usage: "parent/child pairs"},
			&cli.IntFlag{Name: "child-ms", Value: 300, Usage: "how long the child's step sleeps at least"},
			&cli.DurationFlag{Name: "spread", Value: 2 * time.Second, Usage: "children finish spread over this much longer"},
			jsonFlag(),
		}, benchWorkerFlags(50)...),
		Action: a.benchWaits,
	}
}

func (a *app) benchWaits(c *cli.Context) error {
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	n := c.Int("count")
	if n < 1 || c.Int("concurrency") < 1 || c.Int("child-ms") < 0 {
		return usagef("--count and --concurrency must be positive, --child-ms not negative")
	}
	cfg.Workflows = true
	cfg.MaxConns = 16
	client, done, err := openBench(c, cfg)
	if err != nil {
		return err
	}
	defer done()

	// Both steps read the pair number "k" from their state.
	var mu sync.Mutex
	childDone := map[int64]time.Time{}
	var lat []time.Duration
	pair := func(s *workflow.State) int64 {
		v, _ := s.Get("k")
		k, _ := v.AsInt64()
		return k
	}
	childMS := time.Duration(c.Int("child-ms")) * time.Millisecond
	spread := c.Duration("spread")
	reg := queuety.NewRegistry()
	reg.RegisterStep("BenchChild", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		time.Sleep(childMS + time.Duration(pair(s))*spread/time.Duration(n))
		mu.Lock()
		childDone[pair(s)] = time.Now()
		mu.Unlock()
		return phpjson.NewObject(), nil
	})
	reg.RegisterStep("BenchParent", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		now := time.Now()
		mu.Lock()
		if done, ok := childDone[pair(s)]; ok {
			lat = append(lat, now.Sub(done))
		}
		mu.Unlock()
		return phpjson.NewObject(), nil
	})
	w, err := client.NewWorker(reg)
	if err != nil {
		return err
	}
	meter := startCPU(c.Context, clientstore.Of(client))
	if err := w.Start(c.Context); err != nil {
		return err
	}
	defer w.Stop(context.Background())
	for k := 0; k < n; k++ {
		state := func() *phpjson.Object { return phpjson.NewObject().Set("k", phpjson.Int(int64(k))) }
		child, err := workflow.New("bench_child").Then("BenchChild").Build(state())
		if err != nil {
			return err
		}
		childID, _, err := client.DispatchWorkflow(c.Context, child)
		if err != nil {
			return err
		}
		parent, err := workflow.New("bench_parent").WaitForWorkflow(workflow.WorkflowIDs(childID)).Then("BenchParent").Build(state())
		if err != nil {
			return err
		}
		if _, _, err := client.DispatchWorkflow(c.Context, parent); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(time.Minute + childMS + spread)
	for {
		mu.Lock()
		got := len(lat)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cpu := meter.per(n, "pair")
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return fmt.Errorf("no parent resumed")
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) float64 { return ms(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	res := WaitBenchResult{Parents: len(lat), ResumeP50ms: pct(0.5), ResumeP99ms: pct(0.99), ResumeMaxms: ms(lat[len(lat)-1]),
		PeakRSSMiB: peakRSSMiB(), Server: client.Server().Version, PollInterval: c.Duration("poll-interval").String(), CPU: cpu}
	if c.Bool("json") {
		return printJSON(c, res)
	}
	fmt.Fprintf(c.App.Writer, "%d parents resumed: child done -> parent's next step p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		res.Parents, res.ResumeP50ms, res.ResumeP99ms, res.ResumeMaxms)
	fmt.Fprintf(c.App.Writer, "%s\n", res.CPU)
	return nil
}
