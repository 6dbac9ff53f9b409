package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// --once and --max-jobs count every workflow step: chaining, which runs
// the next step without a claim, is turned off.
func TestRunLimitsTurnChainingOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		maxJobs int
		chain   int
		empty   bool
	}{
		{nil, 0, 0, false},
		{[]string{"--once"}, 1, -1, true},
		{[]string{"--max-jobs", "5"}, 5, -1, false},
		{[]string{"--stop-when-empty"}, 0, 0, true},
	} {
		var cfg queuety.Config
		var l runLimits
		app := &ucli.App{Commands: []*ucli.Command{{Name: "work", Flags: runLimitFlags(), Action: func(c *ucli.Context) (err error) {
			l, err = readRunLimits(c, &cfg)
			return err
		}}}}
		require.NoError(t, app.Run(append([]string{"queuety", "work"}, tc.args...)))
		require.Equal(t, tc.maxJobs, cfg.MaxJobs, tc.args)
		require.Equal(t, tc.chain, cfg.WorkflowChainSteps, tc.args)
		require.Equal(t, tc.empty, l.stopWhenEmpty, tc.args)
	}
}

// The plugin's once-run time budget: --once gets the job timeout (the
// plugin's max_execution_time), --max-time its own time; other runs none.
func TestRunLimitsSetTheTimeBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		budget time.Duration
	}{
		{nil, 0},
		{[]string{"--stop-when-empty"}, 0},
		{[]string{"--once"}, 90 * time.Second},
		{[]string{"--max-time", "55s"}, 55 * time.Second},
		{[]string{"--once", "--max-time", "20s"}, 20 * time.Second},
	} {
		cfg := queuety.Config{JobTimeout: 90 * time.Second}
		app := &ucli.App{Commands: []*ucli.Command{{Name: "work", Flags: runLimitFlags(), Action: func(c *ucli.Context) (err error) {
			_, err = readRunLimits(c, &cfg)
			return err
		}}}}
		require.NoError(t, app.Run(append([]string{"queuety", "work"}, tc.args...)))
		require.Equal(t, tc.budget, cfg.TimeBudget, tc.args)
	}
}
