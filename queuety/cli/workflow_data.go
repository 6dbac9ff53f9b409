package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// The plugin's `wp queuety workflow artifacts|artifact`, and a dispatch of
// a definition bundle (Queuety::dispatch_definition) from a file.

// artifactListing is one artifacts row as the plugin's list gives it:
// content only with --with-content (the outer Content hides the
// artifact's own in the JSON).
type artifactListing struct {
	*workflow.Artifact
	Content *phpjson.Value `json:"content,omitempty"`
}

func (a *app) artifactsCommand() *cli.Command {
	return &cli.Command{
		Name: "artifacts", Usage: "a workflow's stored artifacts, by key", ArgsUsage: "<id>",
		Description: `--format json prints the artifacts as --json does (the plugin's json_encode of
them); csv, yaml and count use the plugin's columns Key, Kind, Step, UpdatedAt
(and Content with --with-content).

   queuety workflow artifacts 42
   queuety workflow artifacts 42 --limit 10 --format csv
   queuety workflow artifacts 42 --with-content --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "with-content", Usage: "include each artifact's content"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many artifacts, by key"},
			formatFlag(), jsonFlag(),
		},
		Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
			if c.Int("limit") < 1 {
				return usagef("--limit %d: must be at least 1", c.Int("limit"))
			}
			if err := checkFormat(c, false); err != nil {
				return err
			}
			if _, err := client.WorkflowStatus(c.Context, id); err != nil {
				return err // a missing workflow is exit 3, not an empty list
			}
			list, err := client.Artifacts(c.Context, id)
			if err != nil {
				return err
			}
			if len(list) > c.Int("limit") {
				list = list[:c.Int("limit")]
			}
			withContent := c.Bool("with-content")
			out := make([]artifactListing, len(list))
			for i, art := range list {
				out[i] = artifactListing{Artifact: art}
				if withContent {
					out[i].Content = &list[i].Content
				}
			}
			if f := c.String("format"); c.Bool("json") || f == "json" {
				return printJSON(c, out)
			} else if f != "table" {
				it := items{fields: []string{"Key", "Kind", "Step", "UpdatedAt"}}
				if withContent {
					it.fields = append(it.fields, "Content")
				}
				for _, l := range out {
					step := any("-")
					if l.StepIndex != nil {
						step = *l.StepIndex
					}
					row := []any{l.Key, l.Kind, step, l.UpdatedAt}
					if l.Content != nil {
						b, err := phpjson.Encode(*l.Content)
						if err != nil {
							return err
						}
						row = append(row, string(b))
					}
					it.add(row...)
				}
				return printItems(c, f, it)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			header := "KEY\tKIND\tSTEP\tUPDATED"
			if withContent {
				header += "\tCONTENT"
			}
			fmt.Fprintln(tw, header)
			for _, l := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s", esc(l.Key), esc(l.Kind), orDash(l.StepIndex), l.UpdatedAt)
				if l.Content != nil {
					b, err := phpjson.Encode(*l.Content)
					if err != nil {
						return err
					}
					fmt.Fprintf(tw, "\t%s", esc(string(b)))
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		}),
	}
}

func (a *app) artifactCommand() *cli.Command {
	return &cli.Command{
		Name: "artifact", Usage: "one stored artifact of a workflow, with its content (JSON)", ArgsUsage: "<id> <key>",
		Description: `Prints the artifact as the plugin's wp queuety workflow artifact does (JSON;
--json is accepted and changes nothing). A missing one exits 3.

   queuety workflow artifact 42 report | jq .content`,
		Flags: []cli.Flag{jsonFlag()},
		Action: withClient(func(c *cli.Context) error {
			_, err := workflowArgs(c, 2)
			return err
		}, func(c *cli.Context, client *queuety.Client) error {
			id, _ := workflowArgs(c, 2)
			art, err := client.Artifact(c.Context, id, c.Args().Get(1))
			if err != nil { // store.ErrArtifactNotFound: exit 3
				return err
			}
			return printJSON(c, art)
		}),
	}
}

func (a *app) dispatchDefinitionCommand() *cli.Command {
	return &cli.Command{
		Name: "dispatch", Usage: "start a workflow from a definition file (Queuety::dispatch_definition)", ArgsUsage: "<definition.json>",
		Description: `The file holds a definition bundle as WorkflowBuilder::build_runtime_definition()
writes it (PHP: wp_json_encode(Queuety::workflow('x')->then(A::class)->build_runtime_definition()),
Go: Builder.RuntimeDefinition().Raw), with at least one step:

   {"name":"onboarding","steps":[{"type":"single","class":"App\\Steps\\Welcome"}],"queue":"default"}

   queuety workflow dispatch onboarding.json --state '{"user_id":7}'
   queuety workflow dispatch onboarding.json --idempotency-key user-7 --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Value: "{}", Usage: "the initial state, a JSON object"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "dispatch once per key: a second dispatch returns the first workflow"},
			jsonFlag(),
		},
		Action: withClient(func(c *cli.Context) error {
			_, _, err := readDefinition(c)
			return err
		}, func(c *cli.Context, client *queuety.Client) error {
			def, initial, _ := readDefinition(c)
			d, err := def.Dispatch(initial, workflow.DefinitionDispatchOptions{
				IdempotencyKey: c.String("idempotency-key"), HandlerMetadata: a.reg.Steps(),
			})
			if err != nil {
				return usageError{err}
			}
			id, existing, err := client.DispatchWorkflow(c.Context, d)
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("Workflow #%d dispatched.", id)
			if existing {
				msg = fmt.Sprintf("Workflow #%d already dispatched with this idempotency key.", id)
			}
			return printResult(c, client, id, msg)
		}),
	}
}

// readDefinition reads the definition file and --state, refusing what
// dispatch_definition refuses.
func readDefinition(c *cli.Context) (workflow.RuntimeDefinition, *phpjson.Object, error) {
	var def workflow.RuntimeDefinition
	if c.NArg() != 1 {
		return def, nil, usagef("%s takes one definition file", c.Command.FullName())
	}
	path := c.Args().First()
	b, err := os.ReadFile(path)
	if err != nil {
		return def, nil, usagef("%v", err)
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return def, nil, usagef("%s: not JSON: %v", path, err)
	}
	if def, err = workflow.ParseRuntimeDefinition(v); err != nil {
		return def, nil, usagef("%s: %v", path, err)
	}
	if len(def.Steps) == 0 {
		return def, nil, usagef("%s: Workflow definition must have at least one step.", path)
	}
	sv, err := phpjson.DecodeString(c.String("state"))
	initial, ok := sv.AsObject()
	if err == nil && !ok {
		if l, isList := sv.AsList(); isList && len(l) == 0 {
			initial, ok = phpjson.NewObject(), true
		}
	}
	if err != nil || !ok {
		return def, nil, usagef("--state %q: want a JSON object%s", c.String("state"), jsonWhy(err))
	}
	return def, initial, nil
}
