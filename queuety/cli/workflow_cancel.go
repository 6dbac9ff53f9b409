package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// cancelCommand is `workflow cancel`. A workflow whose compensations,
// on_cancel handler or both are PHP classes can only be cancelled where
// they can run: with --php they run in a PHP pool started for the
// command; without it such a cancel is refused (workflow.ErrNeedsPHP)
// and nothing changes.
func (a *app) cancelCommand() *cli.Command {
	return &cli.Command{
		Name: "cancel", Usage: "cancel a workflow: bury its jobs, run compensations and on_cancel", ArgsUsage: "<id>",
		Description: "   queuety workflow cancel 42\n   queuety workflow cancel 42 --php \"php php-bridge/bin/queuety-php-worker --bootstrap app.php\"",
		Flags:       append([]cli.Flag{jsonFlag()}, phpFlags()...),
		Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
			_, stop, err := a.startCommandPool(c)
			if err != nil {
				return err
			}
			defer stop()
			if err := client.CancelWorkflow(c.Context, id, a.reg); err != nil {
				return err
			}
			return printResult(c, client, id, fmt.Sprintf("Workflow #%d cancelled.", id))
		}),
	}
}
