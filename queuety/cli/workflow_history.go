package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// The plugin's `wp queuety workflow rewind|fork|replay|state-at`.

// stepArg parses the <step> argument (0-based) at position i.
func stepArg(c *cli.Context, i int) (int, error) {
	s := c.Args().Get(i)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 {
		return 0, usagef("%q is not a step index (0-255, counted from 0)", s)
	}
	return n, nil
}

func (a *app) rewindCommand() *cli.Command {
	return &cli.Command{
		Name: "rewind", Usage: "rewind a workflow to the state after a step and run again from the next one", ArgsUsage: "<id> <step>",
		Description: `As Queuety::rewind_workflow: the workflow takes the public state recorded when
<step> (0-based) completed (see workflow state-at), keeps its runtime settings,
becomes running at step <step>+1 with its error cleared, its pending and
processing jobs are buried ("Superseded by workflow rewind") and that step is
enqueued. Rewinding to the last step is refused (the plugin would leave the
workflow running with no step to run). --php reads the step class's settings.

   queuety workflow rewind 42 1`,
		Flags: append([]cli.Flag{jsonFlag()}, phpFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if _, err := workflowArgs(c, 2); err != nil {
				return err
			}
			_, err := stepArg(c, 1)
			return err
		}, func(c *cli.Context, client *queuety.Client) error {
			id, _ := workflowArgs(c, 2)
			step, _ := stepArg(c, 1)
			err := a.withClassSettings(c, func(opts ...queuety.RerunOption) error {
				return client.RewindWorkflow(c.Context, id, step, a.reg, opts...)
			})
			if err != nil {
				return err
			}
			return printResult(c, client, id, fmt.Sprintf("Workflow #%d rewound to step %d.", id, step))
		}),
	}
}

func (a *app) forkCommand() *cli.Command {
	return &cli.Command{
		Name: "fork", Usage: "copy a workflow into an independent one at its current step", ArgsUsage: "<id>",
		Description: `As Queuety::fork_workflow: a new running workflow "<name>_fork_<unix time>"
with the same state, step and step count, whose current step is enqueued;
workflow_forked is logged on both. --json prints the new workflow's status.

   queuety workflow fork 42`,
		Flags: append([]cli.Flag{jsonFlag()}, phpFlags()...),
		Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
			var forked int64
			err := a.withClassSettings(c, func(opts ...queuety.RerunOption) (err error) {
				forked, err = client.ForkWorkflow(c.Context, id, a.reg, opts...)
				return err
			})
			if err != nil {
				return err
			}
			return printResult(c, client, forked, fmt.Sprintf("Workflow #%d forked. New workflow ID: %d.", id, forked))
		}),
	}
}

func (a *app) replayCommand() *cli.Command {
	return &cli.Command{
		Name: "replay", Usage: "a new workflow from an export file (workflow export)", ArgsUsage: "<file>",
		Description: `As Queuety::replay_workflow_file: reads a document written by workflow export
(or the plugin's), writes a new workflow "<name>_replay_<unix time>" with its
state and status, copies its events, logs, signals, wait dependencies,
artifacts and chunks without running anything, records a workflow_replayed
event naming the source, and enqueues the current step of a running one.

   queuety workflow export 42 --output wf.json
   queuety workflow replay wf.json`,
		Flags: append([]cli.Flag{jsonFlag()}, phpFlags()...),
		Action: withClient(func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("workflow replay takes one <file>")
			}
			return nil
		}, func(c *cli.Context, client *queuety.Client) error {
			path := c.Args().First()
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return usagef("File not found: %s", path)
			}
			if err != nil {
				return fmt.Errorf("read workflow export: %w", err)
			}
			v, err := phpjson.Decode(b)
			if err != nil {
				return usagef("Invalid JSON: %v", err)
			}
			doc, ok := v.AsObject()
			if !ok {
				return usagef("Workflow export did not decode to an array: %s", path)
			}
			var id int64
			err = a.withClassSettings(c, func(opts ...queuety.RerunOption) (err error) {
				id, err = client.ReplayWorkflow(c.Context, doc, a.reg, opts...)
				return err
			})
			var re *workflow.ReplayError
			if errors.As(err, &re) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			return printResult(c, client, id, fmt.Sprintf("Workflow replayed. New workflow ID: %d.", id))
		}),
	}
}

func (a *app) stateAtCommand() *cli.Command {
	return &cli.Command{
		Name: "state-at", Usage: "the public state recorded after a step completed", ArgsUsage: "<id> <step>",
		Description: `As Queuety::workflow_state_at: the state_after of the step's last
step_completed (or workflow_resumed) event. Exit 3 when none was recorded.

   queuety workflow state-at 42 1
   queuety workflow state-at 42 1 --json | jq .total`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print only the state, as JSON"}},
		Action: withClient(func(c *cli.Context) error {
			if _, err := workflowArgs(c, 2); err != nil {
				return err
			}
			_, err := stepArg(c, 1)
			return err
		}, func(c *cli.Context, client *queuety.Client) error {
			id, _ := workflowArgs(c, 2)
			step, _ := stepArg(c, 1)
			state, err := client.WorkflowStateAt(c.Context, id, step)
			if err != nil {
				return err
			}
			if state == nil {
				if _, err := client.WorkflowStatus(c.Context, id); err != nil {
					return err
				}
				return noStateError{id: id, step: step}
			}
			b, err := phpjson.Encode(phpjson.ObjectValue(state))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				_, err = fmt.Fprintf(c.App.Writer, "%s\n", b)
				return err
			}
			pretty, err := workflow.ExportJSON(state)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "State at step %d for workflow #%d:\n%s\n", step, id, pretty)
			return nil
		}),
	}
}

// noStateError is state-at's "nothing recorded" (exit 3, not found).
type noStateError struct {
	id   int64
	step int
}

func (e noStateError) Error() string {
	return fmt.Sprintf("No recorded state found for workflow #%d at step %d.", e.id, e.step)
}
