package cli

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPHPSecondsEnvironment: Queuety's constants are whole seconds.
func TestPHPSecondsEnvironment(t *testing.T) {
	t.Setenv("QUEUETY_STALE_TIMEOUT", "5")
	t.Setenv("QUEUETY_MAX_EXECUTION_TIME", "90s")
	phpSecondsEnv()
	require.Equal(t, "5s", os.Getenv("QUEUETY_STALE_TIMEOUT"))
	require.Equal(t, "90s", os.Getenv("QUEUETY_MAX_EXECUTION_TIME"))
}
