package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --metrics-listen has no token: without a host it binds loopback; any
// other interface must be named.
func TestMetricsListenAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"9090": "127.0.0.1:9090", ":9090": "127.0.0.1:9090", "127.0.0.1:0": "127.0.0.1:0",
		"[::1]:9090": "[::1]:9090", "0.0.0.0:9090": "0.0.0.0:9090", "localhost:9090": "localhost:9090",
	} {
		got, err := metricsAddr(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := metricsAddr("a:b:c")
	require.Error(t, err)
}
