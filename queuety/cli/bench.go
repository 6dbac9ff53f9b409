package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/builtins"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
)

func (a *app) benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure the job runtime on this machine",
		Subcommands: []*cli.Command{{
			Name:  "jobs",
			Usage: "insert N noop jobs, drain them with the real worker, print jobs/s",
			Description: `Drain mode (default) inserts --count queuety.noop jobs, then times one worker
draining them (Queuety's log rows included) and prints jobs/s and peak RSS.
Steady mode (--rate) dispatches at a fixed rate to an idle worker for
--duration and prints the dispatch-to-start latency p50 and p99.

` + benchHelp + `

With --php the jobs are --php-handler jobs run by the PHP handler pool
(see queuety work --help), so the figure includes the PHP round trip.

   queuety bench jobs --count 50000
   queuety bench jobs --rate 200 --duration 10s
   queuety bench jobs --count 20000 --concurrency 64 --php-workers 4 --php-handler ok \
       --php "php php-bridge/bin/queuety-php-worker --bootstrap queuety/internal/phppool/testdata/app.php"`,
			Flags: append([]cli.Flag{
				&cli.IntFlag{Name: "count", Value: 50000, Usage: "jobs to drain"},
				&cli.IntFlag{Name: "max-claim-batch", Value: queuety.DefaultMaxClaimBatch, Usage: "rows one claim may take (1-10000)"},
				&cli.IntFlag{Name: "claim-lanes", Value: queuety.DefaultClaimLanes, Usage: "claims kept going at once (1-64)"},
				&cli.IntFlag{Name: "rate", Usage: "steady mode: jobs dispatched per second"},
				&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "steady mode: how long to dispatch"},
				&cli.StringFlag{Name: "php-handler", Usage: "with --php: the PHP handler the drained jobs name (a noop one, for the pool's overhead)"},
				&cli.BoolFlag{Name: "bare", Usage: "drain with a bare claim/complete loop on the worker's statements instead of the worker: the ceiling of the statements on this server"},
				jsonFlag(),
			}, append(append(benchWorkerFlags(200), phpFlags()...), profileFlags()...)...),
			Action: a.benchJobs,
		}, a.benchWorkflowsCommand(), a.benchPHPWorkflowsCommand(), a.benchWaitsCommand(), a.benchLocalCommand(), a.benchSitesCommand()},
	}
}

// BenchResult is what `bench jobs --json` prints.
type BenchResult struct {
	Mode         string  `json:"mode"`
	Jobs         int     `json:"jobs"`
	Concurrency  int     `json:"concurrency"`
	InsertSecs   float64 `json:"insert_seconds,omitempty"`
	DrainSecs    float64 `json:"drain_seconds,omitempty"`
	JobsPerSec   float64 `json:"jobs_per_second,omitempty"`
	LogRows      int     `json:"log_rows"`
	LatencyP50ms float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99ms float64 `json:"latency_p99_ms,omitempty"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	Server       string  `json:"server"`
	Handler      string  `json:"handler,omitempty"`
	PHPWorkers   int     `json:"php_workers,omitempty"`
	CPU          CPUCost `json:"cpu"`
}

func (a *app) benchJobs(c *cli.Context) error {
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	if c.Int("count") < 1 || c.Int("concurrency") < 1 || c.Int("rate") < 0 {
		return usagef("--count, --concurrency and --rate must be positive")
	}
	phpCfg, usePHP, err := phpPoolConfig(c)
	if err != nil {
		return err
	}
	if usePHP && (c.String("php-handler") == "" || c.Int("rate") > 0) {
		return usagef("--php drains --php-handler jobs: name the PHP handler (steady mode is Go-only)")
	}
	if c.Bool("bare") && (usePHP || c.Int("rate") > 0) {
		return usagef("--bare drains noop jobs without a worker: it takes neither --php nor --rate")
	}
	cfg.MaxClaimBatch = c.Int("max-claim-batch")
	cfg.ClaimLanes = c.Int("claim-lanes")
	cfg.MaxConns = 8
	client, done, err := openBench(c, cfg)
	if err != nil {
		return err
	}
	defer done()
	st := clientstore.Of(client)
	res := BenchResult{Concurrency: c.Int("concurrency"), Server: client.Server().Version, Handler: builtins.Noop}
	reg := queuety.NewRegistry()
	builtins.Register(reg)
	if usePHP {
		pool, err := startPHPPool(c.Context, phpCfg, cfg.Logger)
		if err != nil {
			return err
		}
		defer stopPHPPool(pool)
		reg.SetFallback(pool)
		res.Handler, res.PHPWorkers = c.String("php-handler"), phpCfg.Workers
	}
	switch {
	case c.Bool("bare"):
		err = benchBare(c, client, &res)
	case c.Int("rate") > 0:
		err = benchSteady(c, client, &res)
	default:
		err = benchDrain(c, client, reg, &res)
	}
	if err != nil {
		return err
	}
	res.LogRows, _ = countLogs(c.Context, st)
	res.PeakRSSMiB = peakRSSMiB()
	if c.Bool("json") {
		return printJSON(c, res)
	}
	w := c.App.Writer
	switch res.Mode {
	case "drain", "bare":
		fmt.Fprintf(w, "inserted %d jobs in %.2fs\n", res.Jobs, res.InsertSecs)
		php := ""
		if res.Mode == "bare" {
			php = ", bare claim/complete loop, no worker"
		}
		if res.PHPWorkers > 0 {
			php = fmt.Sprintf(", %d PHP workers running %s", res.PHPWorkers, res.Handler)
		}
		fmt.Fprintf(w, "drained  %d jobs in %.2fs: %.0f jobs/s (concurrency %d%s, %d log rows)\n", res.Jobs, res.DrainSecs, res.JobsPerSec, res.Concurrency, php, res.LogRows)
	case "steady":
		fmt.Fprintf(w, "dispatched %d jobs at %d/s: dispatch->start latency p50 %.1f ms, p99 %.1f ms (%d log rows)\n", res.Jobs, c.Int("rate"), res.LatencyP50ms, res.LatencyP99ms, res.LogRows)
	}
	fmt.Fprintf(w, "%s\n", res.CPU)
	fmt.Fprintf(w, "peak RSS %.1f MiB, server %s\n", res.PeakRSSMiB, res.Server)
	return nil
}

// benchWorkerFlags are the worker settings every benchmark takes (read by
// openBench), with the benchmark's default concurrency.
func benchWorkerFlags(concurrency int) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "concurrency", Value: concurrency, Usage: "worker slots"},
		&cli.DurationFlag{Name: "poll-interval", Value: queuety.DefaultPollInterval, Usage: "idle wait between claims (at least 5ms)"},
		&cli.IntFlag{Name: "step-batch", Value: queuety.DefaultWorkflowStepBatch, Usage: "workflow step completions one transaction may group (1-1000; 1: each its own)"},
		&cli.IntFlag{Name: "chain-steps", Value: queuety.DefaultWorkflowChainSteps, Usage: "workflow steps a slot may run in a row without a claim (1-1000, or -1: none)"},
		benchDSNFlag(),
	}
}

// profileFlags are the Go profiles a benchmark can write (bench jobs, bench workflows).
func profileFlags() []cli.Flag {
	return []cli.Flag{
		cpuProfileFlag(),
		&cli.PathFlag{Name: "memprofile", Usage: "write a Go allocation profile, taken after the timed part, to `FILE`"},
	}
}

// cpuProfileFlag is --cpuprofile alone (bench local-activities, whose
// modes each run a worker of their own, has no one part to take an
// allocation profile after).
func cpuProfileFlag() cli.Flag {
	return &cli.PathFlag{Name: "cpuprofile", Usage: "write a Go CPU profile of the timed part to `FILE` (go tool pprof)"}
}

// startCPUProfile starts the --cpuprofile profile, if asked for; the
// returned stop is always safe to call.
func startCPUProfile(c *cli.Context) (stop func(), err error) {
	path := c.Path("cpuprofile")
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeMemProfile writes the --memprofile allocation profile, if asked for.
func writeMemProfile(c *cli.Context) error {
	path := c.Path("memprofile")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	defer f.Close()
	runtime.GC() // so the in-use figures are current, as runtime/pprof advises
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// openBench is how the benchmarks start: in a new database of their own
// on the configured server, or in --bench-dsn's when it holds only rows
// bench wrote (emptied first); migrated, with the claim settings of the
// command's flags and no stale sweep. done closes the client and drops
// the database bench created.
func openBench(c *cli.Context, cfg queuety.Config) (client *queuety.Client, done func(), err error) {
	if err := checkWorkerFlags(c); err != nil {
		return nil, nil, err
	}
	bdb, err := newBenchDB(c, cfg.DSN)
	if err != nil {
		return nil, nil, err
	}
	stopWatch := bdb.dropOnSignal(c.App.ErrWriter)
	cfg.DSN = bdb.dsn
	if !c.IsSet("prefix") {
		cfg.TablePrefix, cfg.NoTablePrefix = "bench_", false
	}
	cfg.Concurrency = c.Int("concurrency")
	cfg.PollInterval = c.Duration("poll-interval")
	// Commands without these flags read 0 and keep what cfg says.
	if n := c.Int("step-batch"); n != 0 {
		cfg.WorkflowStepBatch = n
	}
	if n := c.Int("chain-steps"); n != 0 {
		cfg.WorkflowChainSteps = n
	}
	cfg.RescueSchedule = "off"
	cfg.RetentionSchedule = "off"
	client, _, err = openLocal(c, cfg, "bench", false)
	if err != nil {
		stopWatch()
		bdb.drop(c.App.ErrWriter)
		var fr errForeignRows
		if errors.As(err, &fr) {
			err = usagef("--bench-dsn: %v that bench did not write, and bench empties its tables: name an empty database, or leave --bench-dsn out to run in a new one", err)
		}
		return nil, nil, err
	}
	done = func() { stopWatch(); client.Close(); bdb.drop(c.App.ErrWriter) }
	if bdb.name == "" {
		if err := emptyForBench(c.Context, clientstore.Of(client)); err != nil {
			done()
			return nil, nil, err
		}
	}
	return client, done, nil
}

// emptyForBench empties --bench-dsn's tables; openLocal has checked that
// bench may.
func emptyForBench(ctx context.Context, st *store.Store) error {
	if err := st.TruncateJobsAndLogs(ctx); err != nil {
		return err
	}
	if err := st.TruncateActivities(ctx); err != nil {
		return err
	}
	return st.TruncateWorkflows(ctx)
}

func countLogs(ctx context.Context, st *store.Store) (int, error) {
	total := 0
	for _, ev := range []string{store.EventStarted, store.EventCompleted} {
		n, err := st.CountLogEvents(ctx, ev)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// benchDrain inserts res.Handler jobs and times reg's worker draining them.
func benchDrain(c *cli.Context, client *queuety.Client, reg *queuety.Registry, res *BenchResult) error {
	n := c.Int("count")
	res.Mode, res.Jobs = "drain", n
	jobs := make([]store.InsertJob, n)
	for i := range jobs {
		jobs[i] = store.InsertJob{Queue: queuety.DefaultQueue, Handler: res.Handler, Payload: []byte(`[]`), MaxAttempts: 3}
	}
	t0 := time.Now()
	if _, err := clientstore.Of(client).InsertJobs(c.Context, jobs); err != nil {
		return err
	}
	res.InsertSecs = time.Since(t0).Seconds()
	w, err := client.NewWorker(reg)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(c)
	if err != nil {
		return err
	}
	defer stopProfile()
	meter := startCPU(c.Context, clientstore.Of(client))
	t1 := time.Now()
	if err := w.Start(c.Context); err != nil {
		return err
	}
	for st := w.Stats(); st.Completed < int64(n); st = w.Stats() {
		if failed := st.Retried + st.Buried; failed > 0 {
			// A failing handler (a --php-handler typo) would otherwise be
			// retried with backoff and the drain would never end.
			_ = w.Stop(context.Background())
			return fmt.Errorf("%d %s jobs failed (see the log); bench times jobs that succeed", failed, res.Handler)
		}
		time.Sleep(2 * time.Millisecond)
	}
	res.DrainSecs = time.Since(t1).Seconds()
	res.CPU = meter.per(n, "job")
	res.JobsPerSec = float64(n) / res.DrainSecs
	return w.Stop(context.Background())
}

func benchSteady(c *cli.Context, client *queuety.Client, res *BenchResult) error {
	res.Mode, res.Handler = "steady", "bench.latency"
	var mu sync.Mutex
	var lat []time.Duration
	reg := queuety.NewRegistry()
	reg.Register("bench.latency", queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		T int64 `json:"t"`
	}) error {
		d := time.Since(time.Unix(0, p.T))
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		return nil
	}))
	w, err := client.NewWorker(reg)
	if err != nil {
		return err
	}
	meter := startCPU(c.Context, clientstore.Of(client))
	if err := w.Start(c.Context); err != nil {
		return err
	}
	rate, dur := c.Int("rate"), c.Duration("duration")
	tick := time.NewTicker(time.Second / time.Duration(rate))
	end := time.Now().Add(dur)
	sent := 0
	for now := range tick.C {
		if now.After(end) {
			break
		}
		if _, err := client.Dispatch(c.Context, "bench.latency", map[string]any{"t": time.Now().UnixNano()}); err != nil {
			tick.Stop()
			return err
		}
		sent++
	}
	tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Completed < int64(sent) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Stop(context.Background()); err != nil {
		return err
	}
	res.CPU = meter.per(sent, "job")
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	res.Jobs = len(lat)
	if len(lat) == 0 {
		return fmt.Errorf("no job ran")
	}
	pct := func(p float64) float64 {
		i := min(len(lat)-1, int(p*float64(len(lat))))
		return float64(lat[i].Microseconds()) / 1000
	}
	res.LatencyP50ms, res.LatencyP99ms = pct(0.50), pct(0.99)
	return nil
}

// peakRSSMiB reads VmHWM, the process's peak resident set.
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}
