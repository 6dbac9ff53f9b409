package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// workflowStatuses are Queuety's WorkflowStatus values.
var workflowStatuses = []string{"running", "completed", "failed", "paused", "waiting_for_signal", "waiting_for_workflows", "cancelled"}

func (a *app) workflowCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflow",
		Usage: "list, inspect, signal and control workflows",
		Description: `The workflows of the Queuety plugin's tables, whoever started them (PHP or Go).

   queuety workflow list --status waiting_for_signal
   queuety workflow status 42 --json | jq .wait_details
   queuety workflow signal 42 approved --payload '{"by":"ana"}'
   queuety workflow cancel 42`,
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "newest workflows first",
				Description: `A workflow whose state cannot be read is listed with its status as stored and
"corrupt: <reason>" (JSON: "corrupt"); the others are listed as usual.

   queuety workflow list --status failed --limit 20
   queuety workflow list --name onboarding --json | jq '.[].workflow_id'
   queuety workflow list --network /var/www/html/wp-config.php --site 3`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "status", Usage: strings.Join(workflowStatuses, ", ")},
					&cli.StringFlag{Name: "name", Usage: "only workflows of this name"},
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many workflows"}, formatFlag(), jsonFlag(),
				}, siteFlags(false)...),
				Action: withClient(func(c *cli.Context) error {
					if c.Int("limit") < 1 {
						return usagef("--limit %d: must be at least 1", c.Int("limit"))
					}
					if err := checkFormat(c, true); err != nil {
						return err
					}
					if st := c.String("status"); st != "" && !slices.Contains(workflowStatuses, st) {
						return usagef("--status %q: want one of %s", st, strings.Join(workflowStatuses, ", "))
					}
					if c.NArg() > 0 {
						return usagef("%s takes no arguments", c.Command.FullName())
					}
					return nil
				}, func(c *cli.Context, client *queuety.Client) error {
					list, err := client.ListWorkflows(c.Context, queuety.WorkflowFilter{Status: c.String("status"), Name: c.String("name"), Limit: c.Int("limit")})
					if err != nil {
						return err
					}
					if f := c.String("format"); f != "table" && !c.Bool("json") {
						return printItems(c, f, workflowItems(list))
					}
					if c.Bool("json") {
						if list == nil {
							list = []*workflow.StatusReport{}
						}
						return printJSON(c, list)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					corrupt := slices.ContainsFunc(list, func(r *workflow.StatusReport) bool { return r.Corrupt != "" })
					fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tSTEP\tSTARTED\t"+noteHeader(corrupt))
					for _, r := range list {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, esc(r.Name), esc(string(r.Status)), stepLabel(r), r.StartedAt, corruptNote(r))
					}
					return tw.Flush()
				}),
			},
			{
				Name: "status", Usage: "a workflow's status, current step, wait and state", ArgsUsage: "<id>",
				Description: `   queuety workflow status 42
   queuety workflow status 42 --json | jq '.wait_details.remaining'
   queuety workflow status 42 --network /var/www/html/wp-config.php --site "blog 3"`,
				Flags: append([]cli.Flag{jsonFlag()}, siteFlags(false)...),
				Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
					r, err := client.WorkflowStatus(c.Context, id)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, r)
					}
					return printWorkflowStatus(c.App.Writer, r)
				}),
			},
			{
				Name: "timeline", Usage: "a workflow's events, oldest first", ArgsUsage: "<id>",
				Description: `--offset skips that many earlier events, as the plugin's timeline does;
--after skips the events up to an event id (both may be given: --after first).

   queuety workflow timeline 42
   queuety workflow timeline 42 --limit 100 --offset 100 --format csv
   queuety workflow timeline 42 --after 120 --limit 50 --json`,
				Flags: []cli.Flag{
					&cli.Int64Flag{Name: "after", Usage: "only events after this event id"},
					&cli.IntFlag{Name: "offset", Usage: "skip this many earlier events"},
					&cli.IntFlag{Name: "limit", Usage: "at most this many events (0: all)"}, formatFlag(), jsonFlag(),
				},
				Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
					if c.Int("limit") < 0 || c.Int64("after") < 0 || c.Int("offset") < 0 {
						return usagef("--limit, --offset and --after must not be negative")
					}
					if err := checkFormat(c, true); err != nil {
						return err
					}
					events, err := timelinePage(c, client, id)
					if err != nil {
						return err
					}
					if f := c.String("format"); f != "table" && !c.Bool("json") {
						it := items{fields: []string{"ID", "Step", "Event", "Handler", "Duration_ms", "Error", "Created_at"}}
						for _, e := range events {
							var errText any
							if !e.Error.IsNull() {
								b, err := phpjson.Encode(e.Error)
								if err != nil {
									return err
								}
								errText = string(b)
							}
							it.add(e.ID, e.StepIndex, e.Event, e.Handler, orNil(e.DurationMS), errText, e.CreatedAt)
						}
						return printItems(c, f, it)
					}
					if c.Bool("json") {
						if events == nil {
							events = []workflow.TimelineEvent{}
						}
						return printJSON(c, events)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tAT\tSTEP\tEVENT\tHANDLER\tATTEMPT\tMS\t")
					for _, e := range events {
						step := fmt.Sprint(e.StepIndex)
						if e.StepName != nil {
							step += " (" + esc(*e.StepName) + ")"
						}
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", e.ID, e.CreatedAt, step, esc(e.Event), esc(e.Handler), orDash(e.Attempt), orDash(e.DurationMS))
					}
					return tw.Flush()
				}),
			},
			a.signalCommand("signal", "send a signal to a workflow (Queuety::signal)", "<id> <signal>", ""),
			a.signalCommand("approve", "send the approval signal (approve_workflow)", "<id>", queuety.SignalApproval),
			a.signalCommand("reject", "send the rejection signal (reject_workflow)", "<id>", queuety.SignalRejected),
			a.cancelCommand(),
			a.signalCommand("input", "send input data to a workflow waiting for it (submit_workflow_input)", "<id>", "input"),
			a.artifactsCommand(), a.artifactCommand(), a.dispatchDefinitionCommand(),
			a.rewindCommand(), a.forkCommand(), a.replayCommand(), a.stateAtCommand(),
			a.workflowAction("pause", "pause a running workflow (the step in flight finishes)",
				func(c *cli.Context, client *queuety.Client, id int64) (string, error) {
					return fmt.Sprintf("Workflow #%d paused.", id), client.PauseWorkflow(c.Context, id)
				}),
			a.rerunCommand("resume", "resume a paused workflow at its current step", "Workflow #%d resumed.",
				func(c *cli.Context, client *queuety.Client, id int64, opts ...queuety.RerunOption) error {
					return client.ResumeWorkflow(c.Context, id, a.reg, opts...)
				}),
			a.rerunCommand("retry", "run a failed workflow's failed step again", "Workflow #%d retried from its failed step.",
				func(c *cli.Context, client *queuety.Client, id int64, opts ...queuety.RerunOption) error {
					return client.RetryWorkflow(c.Context, id, a.reg, opts...)
				}),
			{
				Name: "export", Usage: "a workflow's rows as the plugin's export document (JSON)", ArgsUsage: "<id>",
				Description: `Prints what Queuety's export_workflow writes: the workflow with its full state,
its jobs, events, logs, signals, artifacts, chunks and wait dependencies.

   queuety workflow export 42 --output workflow-42.json
   queuety workflow export 42 --json | jq '.events | length'`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "compact JSON instead of the pretty form export_json writes"},
					&cli.StringFlag{Name: "output", Usage: "write the JSON to this `file` instead of stdout (export_workflow_to_file)"},
				},
				Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
					doc, err := client.ExportWorkflow(c.Context, id)
					if err != nil {
						return err
					}
					var b []byte
					if c.Bool("json") {
						b, err = phpjson.Encode(phpjson.ObjectValue(doc))
					} else {
						b, err = workflow.ExportJSON(doc)
					}
					if err != nil {
						return err
					}
					if out := c.String("output"); out != "" {
						if err := os.WriteFile(out, b, 0o644); err != nil {
							return fmt.Errorf("write workflow export to %s: %w", out, err)
						}
						fmt.Fprintf(c.App.Writer, "Workflow #%d exported to %s.\n", id, out)
						return nil
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s\n", b)
					return err
				}),
			},
		},
	}
}

// timelinePage reads the events of `workflow timeline`: after --after,
// --offset skipped, at most --limit.
func timelinePage(c *cli.Context, client *queuety.Client, id int64) ([]workflow.TimelineEvent, error) {
	limit, offset := c.Int("limit"), c.Int("offset")
	read := limit
	if limit > 0 {
		read = limit + offset
	}
	events, err := client.WorkflowTimeline(c.Context, id, c.Int64("after"), read)
	if err != nil || offset == 0 {
		return events, err
	}
	if offset >= len(events) {
		return nil, nil
	}
	return events[offset:], nil
}

// workflowItems are the rows of the plugin's workflow list.
func workflowItems(list []*workflow.StatusReport) items {
	it := items{fields: []string{"ID", "Name", "Version", "Hash", "Status", "Step", "StepName", "WaitMode", "Waiting"}}
	dash := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	for _, r := range list {
		hash := "-"
		if r.DefinitionHash != nil {
			hash = *r.DefinitionHash
			if len(hash) > 12 {
				hash = hash[:12]
			}
		}
		waiting := "-"
		if r.WaitType != nil && len(r.WaitingFor) > 0 {
			waiting = *r.WaitType + ":" + strings.Join(r.WaitingFor, ",")
		}
		it.add(r.WorkflowID, r.Name, dash(r.DefinitionVersion), hash, string(r.Status),
			fmt.Sprintf("%d/%d", r.CurrentStep, r.TotalSteps), dash(r.CurrentStepName), dash(r.WaitMode), waiting)
	}
	return it
}

// byWorkflow is withClient for commands taking one workflow id.
func byWorkflow(fn func(c *cli.Context, client *queuety.Client, id int64) error) cli.ActionFunc {
	var id int64
	return withClient(func(c *cli.Context) (err error) {
		id, err = workflowArgs(c, 1)
		return err
	}, func(c *cli.Context, client *queuety.Client) error { return fn(c, client, id) })
}

// workflowArgs checks the argument count and parses the workflow id.
func workflowArgs(c *cli.Context, n int) (int64, error) {
	if c.NArg() != n {
		return 0, usagef("%s takes %s", c.Command.FullName(), c.Command.ArgsUsage)
	}
	var id int64
	if _, err := fmt.Sscanf(c.Args().First(), "%d", &id); err != nil || id < 1 || fmt.Sprint(id) != c.Args().First() {
		return 0, usagef("%q is not a workflow id", c.Args().First())
	}
	return id, nil
}

// workflowAction is a one-line lifecycle command.
func (a *app) workflowAction(name, usage string, fn func(c *cli.Context, client *queuety.Client, id int64) (string, error)) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: "<id>",
		Description: fmt.Sprintf("   queuety workflow %s 42\n   queuety workflow %s 42 --json", name, name),
		Flags:       []cli.Flag{jsonFlag()},
		Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
			msg, err := fn(c, client, id)
			if err != nil {
				return err
			}
			return printResult(c, client, id, msg)
		}),
	}
}

// printResult prints msg, or with --json the workflow's status afterwards.
func printResult(c *cli.Context, client *queuety.Client, id int64, msg string) error {
	if !c.Bool("json") {
		fmt.Fprintln(c.App.Writer, msg)
		return nil
	}
	r, err := client.WorkflowStatus(c.Context, id)
	if err != nil {
		return err
	}
	return printJSON(c, r)
}

// signalCommand is signal (def == "": the name is an argument), approve
// and reject.
func (a *app) signalCommand(name, usage, args, def string) *cli.Command {
	example := fmt.Sprintf("   queuety workflow %s 42 --payload '{\"by\":\"ana\"}'", name)
	flags := []cli.Flag{&cli.StringFlag{Name: "payload", Aliases: []string{"data"}, Usage: "the signal's data, a JSON object (--data, as the plugin's CLI)", Value: "{}"}, jsonFlag()}
	if def == "" {
		example = "   queuety workflow signal 42 approved --payload '{\"by\":\"ana\"}'\n   queuety workflow signal 42 go"
	} else {
		flags = append(flags, &cli.StringFlag{Name: "signal", Usage: "signal name", Value: def})
	}
	nargs := strings.Count(args, "<")
	var id int64
	var payload *phpjson.Object
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: args, Description: example, Flags: flags,
		Action: withClient(func(c *cli.Context) (err error) {
			if id, err = workflowArgs(c, nargs); err != nil {
				return err
			}
			if def == "" && strings.TrimSpace(c.Args().Get(1)) == "" {
				return usagef("the signal name is empty")
			}
			// The name rules before connecting: a name signals.signal_name
			// cannot hold is a usage error, not the server's "Data too
			// long" (N14).
			signal := c.Args().Get(1)
			if def != "" {
				signal = c.String("signal")
			}
			if err := store.CheckName(store.SignalName, signal); err != nil && (def == "" || signal != "") {
				return usagef("%v", err)
			}
			v, err := phpjson.DecodeString(c.String("payload"))
			o, ok := v.AsObject()
			if err != nil || !ok {
				if l, isList := v.AsList(); err == nil && isList && len(l) == 0 {
					o, ok = phpjson.NewObject(), true
				}
			}
			if !ok {
				return usagef("--payload %q: want a JSON object%s", c.String("payload"), jsonWhy(err))
			}
			payload = o
			return nil
		}, func(c *cli.Context, client *queuety.Client) error {
			if _, err := client.WorkflowStatus(c.Context, id); err != nil {
				return err // the plugin ignores a missing workflow; the CLI says so
			}
			signal := c.String("signal")
			var err error
			switch name {
			case "signal":
				signal = c.Args().Get(1)
				err = client.Signal(c.Context, id, signal, payload)
			case "approve":
				err = client.Approve(c.Context, id, payload, signal)
			case "reject":
				err = client.Reject(c.Context, id, payload, signal)
			case "input": // submit_workflow_input: a signal named --signal
				if strings.TrimSpace(signal) == "" {
					return usagef("--signal is empty")
				}
				err = client.Signal(c.Context, id, signal, payload)
				if err == nil && !c.Bool("json") {
					fmt.Fprintf(c.App.Writer, "Input sent to workflow #%d.\n", id)
					return nil
				}
			}
			if err != nil {
				return err
			}
			return printResult(c, client, id, fmt.Sprintf("Signal %q sent to workflow #%d.", signal, id))
		}),
	}
}

// stepLabel is "current/total" with the plugin's 0-based current step, as
// `wp queuety workflow status` and the dashboard print it: a workflow at
// its third of four steps is 2/4 everywhere.
func stepLabel(r *workflow.StatusReport) string {
	s := fmt.Sprintf("%d/%d", r.CurrentStep, r.TotalSteps)
	if r.CurrentStepName != nil && r.CurrentStep < r.TotalSteps {
		s += " " + esc(*r.CurrentStepName)
	}
	return s
}

// corruptNote marks a workflow whose state cannot be read.
func corruptNote(r *workflow.StatusReport) string {
	if r.Corrupt == "" {
		return ""
	}
	return "corrupt: " + esc(r.Corrupt)
}

func orDash[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func printWorkflowStatus(w io.Writer, r *workflow.StatusReport) error {
	fmt.Fprintf(w, "Workflow #%d  %s  (%s)\n", r.WorkflowID, esc(r.Name), esc(string(r.Status)))
	if r.Corrupt != "" {
		fmt.Fprintf(w, "  %s\n", corruptNote(r))
	}
	step := fmt.Sprintf("  step %s", stepLabel(r))
	if r.CurrentStepType != nil && r.CurrentStep < r.TotalSteps {
		step += " [" + esc(*r.CurrentStepType) + "]"
	}
	fmt.Fprintln(w, step)
	fmt.Fprintf(w, "  started %s, completed %s, failed %s, deadline %s\n", r.StartedAt, orDash(r.CompletedAt), orDash(r.FailedAt), orDash(r.DeadlineAt))
	if r.ParentWorkflowID != nil {
		fmt.Fprintf(w, "  parent #%d step %s\n", *r.ParentWorkflowID, orDash(r.ParentStepIndex))
	}
	if r.ErrorMessage != nil {
		fmt.Fprintf(w, "  error: %s\n", esc(*r.ErrorMessage))
	}
	if r.WaitType != nil {
		fmt.Fprintf(w, "  waiting (%s, mode %s) for %s\n", esc(*r.WaitType), orDash(escPtr(r.WaitMode)), strings.Join(escAll(r.WaitingFor), ", "))
		if !r.WaitDetails.IsNull() {
			b, _ := json.Marshal(r.WaitDetails)
			fmt.Fprintf(w, "  wait details: %s\n", b)
		}
	}
	for _, kv := range [][2]*string{{strPtr("version"), r.DefinitionVersion}, {strPtr("idempotency key"), r.IdempotencyKey}} {
		if kv[1] != nil {
			fmt.Fprintf(w, "  %s: %s\n", *kv[0], esc(*kv[1]))
		}
	}
	if !r.Budget.IsNull() {
		b, _ := json.Marshal(r.Budget)
		fmt.Fprintf(w, "  budget: %s\n", b)
	}
	if r.ArtifactCount != nil && *r.ArtifactCount > 0 {
		fmt.Fprintf(w, "  artifacts: %s\n", strings.Join(escAll(r.ArtifactKeys), ", "))
	}
	b, err := json.MarshalIndent(r.State, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "  state: %s\n", b)
	return err
}

func strPtr(s string) *string { return &s }

// BenchStepClass is the noop step class `bench workflows` runs.
const BenchStepClass = "Queuety\\Bench\\NoopStep"

// WorkflowBenchResult is what `bench workflows --json` prints.
type WorkflowBenchResult struct {
	Workflows       int     `json:"workflows"`
	Steps           int     `json:"steps_per_workflow"`
	Concurrency     int     `json:"concurrency"`
	DispatchSecs    float64 `json:"dispatch_seconds"`
	DrainSecs       float64 `json:"drain_seconds"`
	StepsPerSec     float64 `json:"steps_per_second"`
	WorkflowsPerSec float64 `json:"workflows_per_second"`
	PeakRSSMiB      float64 `json:"peak_rss_mib"`
	Server          string  `json:"server"`
	CPU             CPUCost `json:"cpu"`
	StepClass       string  `json:"step_class"`
	PHPWorkers      int     `json:"php_workers,omitempty"`
}

func (a *app) benchWorkflowsCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflows",
		Usage: "dispatch N noop workflows, drain them with the real worker, print steps/s and workflows/s",
		Description: `Dispatches --count workflows of --steps noop Go steps with the Go builder (as
the plugin's dispatch() writes them), then times one worker with --workflows
advancing them all to completed (step jobs, log rows and workflow_events
included).

` + benchHelp + `

   queuety bench workflows --count 2000 --steps 3
   queuety bench workflows --count 5000 --concurrency 100 --json`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 2000, Usage: "workflows to run"},
			&cli.IntFlag{Name: "steps", Value: 3, Usage: "steps per workflow (1-255)"},
			jsonFlag(),
		}, append(benchWorkerFlags(200), profileFlags()...)...),
		Action: a.benchWorkflows,
	}
}

func (a *app) benchWorkflows(c *cli.Context) error {
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	n, steps, err := workflowBenchSize(c)
	if err != nil {
		return err
	}
	cfg.Workflows = true
	cfg.MaxConns = 16
	client, done, err := openBench(c, cfg)
	if err != nil {
		return err
	}
	defer done()
	reg := queuety.NewRegistry()
	reg.RegisterStep(BenchStepClass, func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return phpjson.NewObject(), nil
	})
	res := WorkflowBenchResult{Workflows: n, Steps: steps, Concurrency: c.Int("concurrency"), Server: client.Server().Version, StepClass: BenchStepClass}
	return drainWorkflows(c, client, reg, &res)
}

// workflowBenchSize reads and checks --count and --steps (and
// --concurrency) of the workflow benchmarks.
func workflowBenchSize(c *cli.Context) (n, steps int, err error) {
	n, steps = c.Int("count"), c.Int("steps")
	if n < 1 || c.Int("concurrency") < 1 || steps < 1 || steps > 255 {
		return 0, 0, usagef("--count and --concurrency must be positive, --steps between 1 and 255")
	}
	return n, steps, nil
}

// drainWorkflows dispatches res.Workflows workflows of res.Steps
// res.StepClass steps, times reg's worker advancing them all to completed,
// and prints the result.
func drainWorkflows(c *cli.Context, client *queuety.Client, reg *queuety.Registry, res *WorkflowBenchResult) error {
	n, steps, st := res.Workflows, res.Steps, clientstore.Of(client)
	b := workflow.New("bench")
	for range steps {
		b.Then(res.StepClass)
	}
	t0 := time.Now()
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var dispatchErr error
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				d, err := b.Build(phpjson.NewObject().Set("i", phpjson.Int(int64(i))))
				if err == nil {
					_, _, err = client.DispatchWorkflow(ctx, d)
				}
				if err != nil {
					errOnce.Do(func() { dispatchErr = err; cancel() })
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if dispatchErr != nil {
		return dispatchErr
	}
	res.DispatchSecs = time.Since(t0).Seconds()

	w, err := client.NewWorker(reg)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(c)
	if err != nil {
		return err
	}
	defer stopProfile()
	meter := startCPU(c.Context, st)
	t1 := time.Now()
	if err := w.Start(c.Context); err != nil {
		return err
	}
	for {
		s := w.Stats()
		if s.Retried+s.Buried > 0 {
			_ = w.Stop(context.Background())
			return fmt.Errorf("%d workflow steps failed (see the log); bench times steps that succeed", s.Retried+s.Buried)
		}
		if s.Completed >= int64(n*steps) {
			done, err := st.CountWorkflows(c.Context, "completed")
			if err != nil {
				_ = w.Stop(context.Background())
				return err
			}
			if done >= n {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	res.DrainSecs = time.Since(t1).Seconds()
	res.CPU = meter.per(n*steps, "step")
	if err := w.Stop(context.Background()); err != nil {
		return err
	}
	if err := writeMemProfile(c); err != nil {
		return err
	}
	res.StepsPerSec = float64(n*steps) / res.DrainSecs
	res.WorkflowsPerSec = float64(n) / res.DrainSecs
	res.PeakRSSMiB = peakRSSMiB()
	if c.Bool("json") {
		return printJSON(c, res)
	}
	out := c.App.Writer
	php := ""
	if res.PHPWorkers > 0 {
		php = fmt.Sprintf(", %d PHP workers running %s", res.PHPWorkers, res.StepClass)
	}
	fmt.Fprintf(out, "dispatched %d workflows of %d steps in %.2fs\n", n, steps, res.DispatchSecs)
	fmt.Fprintf(out, "drained    %d steps in %.2fs: %.0f steps/s, %.0f workflows/s (concurrency %d%s)\n",
		n*steps, res.DrainSecs, res.StepsPerSec, res.WorkflowsPerSec, res.Concurrency, php)
	fmt.Fprintf(out, "%s\n", res.CPU)
	fmt.Fprintf(out, "peak RSS %.1f MiB, server %s\n", res.PeakRSSMiB, res.Server)
	return nil
}
