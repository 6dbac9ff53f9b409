package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// Values that make a busy loop, unbounded transactions or meaningless
// negatives are refused before anything connects, naming the flag with its
// dashes.
func TestWorkerFlagBounds(t *testing.T) {
	t.Parallel()
	const nowhere = "root@tcp(127.0.0.1:1)/unused" // never reached: the flags fail first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--poll-interval", "1ns"}, "--poll-interval 1ns: must be at least 5ms"},
		{[]string{"--poll-interval", "0"}, "--poll-interval 0s"},
		{[]string{"--signal-poll-interval", "1ns"}, "--signal-poll-interval 1ns: must be at least 10ms, or negative to turn it off"},
		{[]string{"--wait-sweep-interval", "1ns"}, "--wait-sweep-interval"},
		{[]string{"--deadline-interval", "1ns"}, "--deadline-interval"},
		{[]string{"--deadline-interval", "0"}, "--deadline-interval"},
		{[]string{"--heartbeat-interval", "1ms"}, "--heartbeat-interval 1ms: must be at least 100ms"},
		{[]string{"--heartbeat-interval", "-1s"}, "--heartbeat-interval -1s: must not be negative"},
		{[]string{"--step-batch", "-3"}, "--step-batch -3: must be between 1 and 1000"},
		{[]string{"--step-batch", "0"}, "--step-batch 0"},
		{[]string{"--chain-steps", "-2"}, "--chain-steps -2"},
		{[]string{"--chain-steps", "1000000"}, "--chain-steps 1000000"},
		{[]string{"--claim-lanes", "0"}, "--claim-lanes 0"},
		{[]string{"--max-claim-batch", "0"}, "--max-claim-batch 0"},
		{[]string{"--max-claim-batch", "1000000"}, "--max-claim-batch 1000000"},
		{[]string{"--concurrency", "1000000000000"}, "--concurrency 1000000000000"},
		{[]string{"--stale-timeout", "-5m"}, "--stale-timeout -5m0s: must not be negative"},
		{[]string{"--job-timeout", "0"}, "--job-timeout 0s"},
		{[]string{"--max-conns", "1"}, "--max-conns 1"},
		{[]string{"--rescue-schedule", "61 * * * *"}, "--rescue-schedule \"61 * * * *\""},
		{[]string{"--stale-timeout", "600", "--heartbeat-interval", "20m"}, "--heartbeat-interval 20m0s: must be shorter than --stale-timeout 10m0s"},
	} {
		r := run(t, on(nowhere, append([]string{"work"}, tc.args...)...)...)
		require.Equal(t, cli.ExitUsage, r.code, r.String())
		require.Contains(t, r.stderr, tc.want, r.String())
		require.NotContains(t, r.stderr, "cannot reach", r.String())
	}
}
