package queuety

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidateTablePrefix(t *testing.T) {
	t.Parallel()
	unset := Config{}
	require.NoError(t, unset.Validate())
	require.Equal(t, "wp_", unset.naming().DBPrefix, "only an unset prefix is wp_")

	none := Config{NoTablePrefix: true}
	require.NoError(t, none.Validate())
	tables, err := none.naming().Resolve()
	require.NoError(t, err)
	require.Equal(t, "queuety_jobs", tables["jobs"], "an empty $table_prefix names the tables as PHP does")

	both := Config{NoTablePrefix: true, TablePrefix: "x_"}
	require.ErrorContains(t, both.Validate(), "set one or the other")
}

// Intervals near zero would make an idle worker a busy loop; negative
// sentinels stay allowed where they mean "off".
func TestValidateFloors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{PollInterval: time.Nanosecond}, "poll interval 1ns: must be at least 5ms"},
		{Config{PollInterval: -time.Second}, "poll interval -1s"},
		{Config{WaitSweepInterval: time.Nanosecond}, "wait sweep interval 1ns"},
		{Config{SignalPollInterval: time.Millisecond}, "signal poll interval 1ms"},
		{Config{DeadlineInterval: time.Microsecond}, "deadline interval 1µs"},
		{Config{HeartbeatInterval: time.Millisecond}, "heartbeat interval 1ms: must be at least 100ms"},
		{Config{MaxClaimBatch: 1_000_000}, "max claim batch 1000000"},
		{Config{WorkflowStepBatch: 5000}, "workflow step batch 5000"},
		{Config{WorkflowChainSteps: 1_000_000}, "workflow chain steps 1000000"},
	} {
		require.ErrorContains(t, tc.cfg.Validate(), tc.want)
	}
	ok := Config{WaitSweepInterval: -1, SignalPollInterval: -1, DeadlineInterval: -1,
		WorkflowChainSteps: -1, WorkflowStepBatch: -1, PollInterval: MinPollInterval, RescueSchedule: "OFF"}
	require.NoError(t, ok.Validate())
	require.Equal(t, "off", ok.RescueSchedule, "OFF in any case turns the sweep off")
}
