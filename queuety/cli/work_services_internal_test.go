package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ucli "github.com/urfave/cli/v2"

	"github.com/queuety-go/queuety/queuety"
)

// The wait sweeper and signal poller intervals of `work --workflows`.
func TestWorkWorkflowServiceFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args          []string
		sweep, signal time.Duration
	}{
		{nil, queuety.DefaultWaitSweepInterval, queuety.DefaultSignalPollInterval},
		{[]string{"--wait-sweep-interval", "1m", "--signal-poll-interval", "-1s"}, time.Minute, -time.Second},
	} {
		var cfg queuety.Config
		app := &ucli.App{Flags: workerFlags(), Action: func(c *ucli.Context) error { return workerConfig(c, &cfg) }}
		require.NoError(t, app.Run(append([]string{"work"}, tc.args...)))
		require.Equal(t, tc.sweep, cfg.WaitSweepInterval)
		require.Equal(t, tc.signal, cfg.SignalPollInterval)
	}
}
