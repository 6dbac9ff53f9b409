package cli

import "github.com/urfave/cli/v2"

// Workflow steps run by default, as the plugin's `wp queuety work` runs
// them: a site that swaps the plugin's worker for this one must not find
// its workflows stuck behind a flag. --no-workflows opts out; --workflows
// is still accepted so existing scripts start.

func workflowsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "workflows", EnvVars: []string{"QUEUETY_WORKFLOWS"}, Value: true, DefaultText: "on",
		Usage: "run workflow steps and advance their workflows (the default; QUEUETY_WORKFLOWS=0 turns it off)"}
}

func noWorkflowsFlag(usage string) cli.Flag {
	return &cli.BoolFlag{Name: "no-workflows", EnvVars: []string{"QUEUETY_NO_WORKFLOWS"}, Usage: usage}
}

// workflowsOn reads --workflows / --no-workflows: on unless either turns
// it off (--no-workflows wins over a --workflows left in a script).
func workflowsOn(c *cli.Context) (bool, error) {
	return c.Bool("workflows") && !c.Bool("no-workflows"), nil
}
