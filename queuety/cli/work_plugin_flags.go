package cli

import (
	"strconv"

	"github.com/urfave/cli/v2"
)

// The plugin's worker-pool flags of `wp queuety work`. The plugin forks
// --workers PHP processes, each running one job at a time, or scales
// between --min-workers and --max-workers. queuety runs jobs on
// goroutines, so a pool is a number of jobs at once:
//
//   - without --php, --workers N is --concurrency N (N jobs at once, as N
//     plugin workers run);
//   - with --php, --workers N is --php-workers N (N PHP processes, as the
//     plugin forks), and --concurrency keeps its PHP default;
//   - --max-workers M is --workers M: the pool stays at its maximum (a
//     goroutine that waits costs nothing to keep), and --min-workers is
//     checked as the plugin checks it and otherwise has no effect.

func pluginWorkerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "workers", Usage: "the plugin's fixed pool: N jobs at once (--concurrency N), or with --php N PHP processes (--php-workers N)"},
		&cli.IntFlag{Name: "min-workers", Usage: "the plugin's adaptive pool minimum (needs --max-workers; the pool stays at its maximum)"},
		&cli.IntFlag{Name: "max-workers", Usage: "the plugin's adaptive pool maximum: as --workers"},
	}
}

// applyPluginWorkers maps --workers, --min-workers and --max-workers onto
// --concurrency or --php-workers, refusing what the plugin refuses and a
// pool given twice.
func applyPluginWorkers(c *cli.Context) error {
	workers := c.Int("workers")
	minSet, maxSet := c.IsSet("min-workers"), c.IsSet("max-workers")
	if c.IsSet("workers") && workers < 1 {
		return usagef("--workers %d: must be at least 1", workers)
	}
	if workers > 1 && (minSet || maxSet) {
		return usagef("Use either --workers for a fixed pool or --min-workers/--max-workers for adaptive scaling.")
	}
	if minSet && !maxSet {
		return usagef("--min-workers requires --max-workers.")
	}
	if maxSet {
		lo, hi := 1, c.Int("max-workers")
		if minSet {
			lo = c.Int("min-workers")
		}
		if hi < 1 || lo < 1 || lo > hi {
			return usagef("--min-workers %d --max-workers %d: want 1 <= min <= max", lo, hi)
		}
		workers = hi
	}
	if workers < 1 {
		return nil
	}
	target := "concurrency"
	if c.String("php") != "" {
		target = "php-workers"
	}
	if c.IsSet(target) {
		return usagef("--%s and --workers/--max-workers both set the pool: give one", target)
	}
	return c.Set(target, strconv.Itoa(workers))
}
