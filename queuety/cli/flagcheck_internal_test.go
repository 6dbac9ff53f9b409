package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// workerConfigOf runs the worker flags as `work` reads them (args
// normalized as Main does) and validates the Config.
func workerConfigOf(t *testing.T, args ...string) (queuety.Config, error) {
	t.Helper()
	var cfg queuety.Config
	app := &ucli.App{Flags: workerFlags(), Action: func(c *ucli.Context) error {
		if err := workerConfig(c, &cfg); err != nil {
			return err
		}
		return cfg.Validate()
	}}
	err := app.Run(normalizeArgs(app, append([]string{"work"}, args...)))
	return cfg, err
}

// --stale-timeout, --job-timeout and --shutdown-grace take plain seconds,
// as their environment variables and the README do; --rescue-schedule OFF
// is off in any case.
func TestWorkerFlagsPlainSecondsAndOff(t *testing.T) {
	t.Parallel()
	cfg, err := workerConfigOf(t, "--stale-timeout", "600", "--job-timeout=300", "--shutdown-grace", "5", "--rescue-schedule", "OFF")
	require.NoError(t, err)
	require.Equal(t, 600*time.Second, cfg.StaleTimeout)
	require.Equal(t, 300*time.Second, cfg.JobTimeout)
	require.Equal(t, 5*time.Second, cfg.ShutdownGrace)
	require.Equal(t, "off", cfg.RescueSchedule)

	// The sentinels stay: negative turns a service off, -1 chaining.
	cfg, err = workerConfigOf(t, "--wait-sweep-interval", "-1s", "--signal-poll-interval", "-1s", "--deadline-interval", "-1s",
		"--chain-steps", "-1", "--heartbeat-interval", "0", "--poll-interval", "5ms")
	require.NoError(t, err)
	require.Equal(t, -1, cfg.WorkflowChainSteps)
}
