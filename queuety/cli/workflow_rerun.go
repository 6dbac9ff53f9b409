package cli

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// rerunCommand is `workflow retry` and `workflow resume`. Both enqueue a
// step job, which takes its step class's #[QueuetyStep] attributes and
// config() (max_attempts, queue, backoff, …) as the plugin's do. A PHP
// class's are read by a PHP pool: with --php one is started for the
// command; without it a class that has no Go handler gets the workflow's
// settings, and a warning says so.
func (a *app) rerunCommand(name, usage, done string, run func(c *cli.Context, client *queuety.Client, id int64, opts ...queuety.RerunOption) error) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: "<id>",
		Description: fmt.Sprintf("   queuety workflow %s 42\n   queuety workflow %s 42 --json\n"+
			"   queuety workflow %s 42 --php \"php php-bridge/bin/queuety-php-worker --bootstrap app.php\"", name, name, name),
		Flags: append([]cli.Flag{jsonFlag()}, phpFlags()...),
		Action: byWorkflow(func(c *cli.Context, client *queuety.Client, id int64) error {
			err := a.withClassSettings(c, func(opts ...queuety.RerunOption) error { return run(c, client, id, opts...) })
			if err != nil {
				return err
			}
			return printResult(c, client, id, fmt.Sprintf(done, id))
		}),
	}
}

// withClassSettings runs fn, a command that enqueues step jobs (retry,
// resume, rewind, fork, replay), with a PHP pool for --php. Without one,
// each step class whose settings could not be read gets a warning.
func (a *app) withClassSettings(c *cli.Context, fn func(opts ...queuety.RerunOption) error) error {
	usePHP, stop, err := a.startCommandPool(c)
	if err != nil {
		return err
	}
	defer stop()
	var unread []string
	var opts []queuety.RerunOption
	if !usePHP {
		opts = append(opts, queuety.OnUnreadClassSettings(func(class string) {
			if !slices.Contains(unread, class) {
				unread = append(unread, class)
			}
		}))
	}
	if err := fn(opts...); err != nil {
		return err
	}
	for _, class := range unread {
		fmt.Fprintf(c.App.ErrWriter, "warning: step class %s has no Go handler: its job got the workflow's settings, "+
			"which may differ from the class's config() and attributes; pass --php to read them\n", class)
	}
	return nil
}

// startCommandPool starts a PHP pool for one command when --php is given,
// as the registry's fallback: the command's engine then runs PHP
// compensations and handlers in it and reads PHP classes' settings.
func (a *app) startCommandPool(c *cli.Context) (started bool, stop func(), err error) {
	phpCfg, usePHP, err := phpPoolConfig(c)
	if err != nil || !usePHP {
		return false, func() {}, err
	}
	logger, err := newLogger(c)
	if err != nil {
		return false, nil, err
	}
	pool, err := startPHPPool(c.Context, phpCfg, logger)
	if err != nil {
		return false, nil, err
	}
	a.reg.SetFallback(pool)
	return true, func() { stopPHPPool(pool) }, nil
}
