package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"
)

// The plugin's --workers / --max-workers set the jobs run at once without
// --php, and the PHP processes with it (whose slots then follow the
// pool's default, 200 a process).
func TestPluginWorkerFlagsMapOntoThePool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args                    []string
		concurrency, phpWorkers int
	}{
		{[]string{"--workers", "6"}, 6, 4},
		{[]string{"--min-workers", "2", "--max-workers", "9"}, 9, 4},
		{[]string{"--max-workers", "3"}, 3, 4},
		{[]string{"--php", "php w.php", "--workers", "3"}, 600, 3},
		{[]string{"--php", "php w.php", "--max-workers", "2", "--concurrency", "40"}, 40, 2},
		{[]string{"--workers", "1"}, 1, 4},
	} {
		var concurrency, workers int
		app := &ucli.App{Flags: append(append(workerFlags(), phpFlags()...), pluginWorkerFlags()...), Action: func(c *ucli.Context) error {
			if err := applyPluginWorkers(c); err != nil {
				return err
			}
			concurrency, workers = c.Int("concurrency"), c.Int("php-workers")
			if c.String("php") != "" {
				concurrency = phpConcurrency(c, concurrency, workers)
			}
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"work"}, tc.args...)), "%v", tc.args)
		require.Equal(t, tc.concurrency, concurrency, "jobs at once with %v", tc.args)
		require.Equal(t, tc.phpWorkers, workers, "PHP processes with %v", tc.args)
	}
}
