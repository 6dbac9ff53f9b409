package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/workflow"
)

// `recover` rescues stale workflow steps too, as the plugin's does (at max
// attempts the step is buried and its workflow failed); --no-workflows
// leaves them alone.
func TestRecoverStaleWorkflowSteps(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	db := openDB(t, dsn)
	ctx := context.Background()
	c, err := queuety.Open(ctx, queuety.Config{DSN: dsn})
	require.NoError(t, err)
	defer c.Close()
	d, err := workflow.New("w").Then("Gone").Build(phpjson.NewObject())
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	exec1(t, db, "UPDATE `"+jobsTable+"` SET status = 'processing', attempts = max_attempts, reserved_by = 'dead', reserved_at = NOW() - INTERVAL 1 HOUR WHERE workflow_id = ?", id)

	r := runOK(t, on(dsn, "recover", "--stale-timeout", "1s", "--no-workflows")...)
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout, "steps are left alone with --no-workflows")
	r = runOK(t, on(dsn, "recover", "--stale-timeout", "1s", "--workflows", "--no-workflows")...)
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout, "--no-workflows wins over a --workflows left in a script")

	r = runOK(t, on(dsn, "recover", "--stale-timeout", "1s")...)
	require.Equal(t, "Recovered 1 stale jobs (0 retried, 1 buried).\n", r.stdout)
	var status, msg string
	require.NoError(t, db.QueryRow("SELECT status, error_message FROM wp_queuety_workflows WHERE id = ?", id).Scan(&status, &msg))
	require.Equal(t, "failed", status)
	require.Equal(t, "Stale: worker died without completing.", msg)
}
