package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

func TestBenchWaits(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	r := runOK(t, on(dsn, "bench", "waits", "--count", "5", "--child-ms", "20", "--spread", "50ms", "--concurrency", "20", "--json")...)
	var res cli.WaitBenchResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.Equal(t, 5, res.Parents, "every parent resumed after its child")
	require.Greater(t, res.ResumeP50ms, 0.0)
	require.GreaterOrEqual(t, res.ResumeMaxms, res.ResumeP99ms)
	bad := run(t, on(dsn, "bench", "waits", "--count", "0")...)
	require.Equal(t, cli.ExitUsage, bad.code, bad.String())
}
