package phppool_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/cli"
)

// `bench php-workflows` runs every step of its workflows in the pool: the
// step class is PHP's, and nothing in Go could run it.
func TestBenchDrainsPHPWorkflowsThroughThePool(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	dsn := c.Config().DSN
	code, stdout, stderr := runCLI("bench", "php-workflows", "--dsn", dsn, "--count", "40", "--steps", "3",
		"--php", phpFlag(t), "--php-workers", "2", "--php-step", "EmptyStep", "--json")
	require.Equal(t, cli.ExitOK, code, stderr)
	var res cli.WorkflowBenchResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, 40, res.Workflows)
	require.Equal(t, 3, res.Steps)
	require.Equal(t, "EmptyStep", res.StepClass)
	require.Equal(t, 2, res.PHPWorkers)
	require.Equal(t, 400, res.Concurrency, "work --php's default: 200 slots a PHP process")
	require.Positive(t, res.StepsPerSec)
	require.Equal(t, "step", res.CPU.Unit)

	code, _, stderr = runCLI("bench", "php-workflows", "--dsn", dsn, "--count", "2", "--php", phpFlag(t), "--php-workers", "1", "--php-step", "ThrowStep")
	require.Equal(t, cli.ExitError, code)
	require.Contains(t, stderr, "workflow steps failed")

	code, _, stderr = runCLI("bench", "php-workflows", "--dsn", dsn, "--php", phpFlag(t))
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, stderr, "--php-step")
}
