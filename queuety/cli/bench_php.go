package cli

import (
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

func (a *app) benchPHPWorkflowsCommand() *cli.Command {
	return &cli.Command{
		Name:  "php-workflows",
		Usage: "dispatch N workflows of PHP step classes, drain them through the PHP pool, print steps/s",
		Description: `Dispatches --count workflows of --steps --php-step steps (the rows the
plugin's Queuety::workflow()->dispatch() writes), then times one worker
advancing them all to completed with every step run by the PHP handler pool
of --php (see queuety work --help): what a WordPress site whose steps are
PHP classes gets. The concurrency defaults to queuety work's.

` + benchHelp + `

   queuety bench php-workflows --php-step EmptyStep \
       --php "php php-bridge/bin/queuety-php-worker --bootstrap queuety/internal/phppool/testdata/app.php"`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "count", Value: 2000, Usage: "workflows to run"},
			&cli.IntFlag{Name: "steps", Value: 3, Usage: "steps per workflow (1-255)"},
			&cli.StringFlag{Name: "php-step", Usage: "the PHP step class every step names (a noop one, for the pool's overhead)"},
			jsonFlag(),
		}, append(append(benchWorkerFlags(queuety.DefaultConcurrency), phpFlags()...), profileFlags()...)...),
		Action: a.benchPHPWorkflows,
	}
}

func (a *app) benchPHPWorkflows(c *cli.Context) error {
	cfg, err := baseConfig(c)
	if err != nil {
		return err
	}
	n, steps, err := workflowBenchSize(c)
	if err != nil {
		return err
	}
	phpCfg, usePHP, err := phpPoolConfig(c)
	if err != nil {
		return err
	}
	if !usePHP || c.String("php-step") == "" {
		return usagef("--php and --php-step are required: the PHP pool's command and the step class it runs")
	}
	// work --php's default slots and connections (openBench reads the
	// concurrency flag, so the connections are decided before it is set).
	cfg.MaxConns = phpMaxConns(c, cfg.MaxConns, phpCfg.Workers)
	if err := c.Set("concurrency", strconv.Itoa(phpConcurrency(c, c.Int("concurrency"), phpCfg.Workers))); err != nil {
		return err
	}
	cfg.Workflows = true
	client, done, err := openBench(c, cfg)
	if err != nil {
		return err
	}
	defer done()
	pool, err := startPHPPool(c.Context, phpCfg, cfg.Logger)
	if err != nil {
		return err
	}
	defer stopPHPPool(pool)
	reg := queuety.NewRegistry()
	reg.SetFallback(pool)
	res := WorkflowBenchResult{Workflows: n, Steps: steps, Concurrency: c.Int("concurrency"), Server: client.Server().Version,
		StepClass: c.String("php-step"), PHPWorkers: phpCfg.Workers}
	return drainWorkflows(c, client, reg, &res)
}
