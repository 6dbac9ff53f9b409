package phppool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// lastStepJob is the newest job of a workflow's step 0: its queue and
// max_attempts.
func lastStepJob(t *testing.T, c *queuety.Client, wf int64) (id int64, queue string, maxAttempts int) {
	t.Helper()
	row := clientstore.Of(c).DB().QueryRowContext(context.Background(), "SELECT id, queue, max_attempts FROM `"+
		clientstore.Of(c).Tables()["jobs"]+"` WHERE workflow_id = ? AND step_index = 0 ORDER BY id DESC LIMIT 1", wf)
	require.NoError(t, row.Scan(&id, &queue, &maxAttempts))
	return id, queue, maxAttempts
}

// setWorkflowStatus leaves the workflow in status with its step job buried,
// as a failed (or paused) run would.
func setWorkflowStatus(t *testing.T, c *queuety.Client, wf, job int64, status string) {
	t.Helper()
	db, tables := clientstore.Of(c).DB(), clientstore.Of(c).Tables()
	_, err := db.Exec("UPDATE `"+tables["jobs"]+"` SET status = 'buried' WHERE id = ?", job)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE `"+tables["workflows"]+"` SET status = ? WHERE id = ?", status, wf)
	require.NoError(t, err)
}

// `workflow retry|resume --php` re-enqueue a PHP step with its class's
// #[QueuetyStep] max_attempts and config() queue, read by a pool started
// for the command; without --php the job gets the workflow's settings and
// the command warns.
func TestWorkflowRetryAndResumeWithPHPReadTheStepClassSettings(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	dsn := c.Config().DSN
	wf := dispatchWorkflow(t, c, workflow.New("rerun").Then("ConfiguredMetaStep"), `{}`)
	first, queue, maxAttempts := lastStepJob(t, c, wf)
	require.Equal(t, "default", queue, "the Go builder cannot read PHP classes")

	setWorkflowStatus(t, c, wf, first, "failed")
	code, stdout, stderr := runCLI("workflow", "retry", itoa(int(wf)), "--dsn", dsn)
	require.Equal(t, cli.ExitOK, code, stderr)
	require.Contains(t, stdout, "retried from its failed step")
	require.Contains(t, stderr, "warning: step class ConfiguredMetaStep has no Go handler")
	noPHP, queue, got := lastStepJob(t, c, wf)
	require.NotEqual(t, first, noPHP)
	require.Equal(t, "default", queue)
	require.Equal(t, maxAttempts, got, "the workflow's settings")

	setWorkflowStatus(t, c, wf, noPHP, "failed")
	code, _, stderr = runCLI("workflow", "retry", itoa(int(wf)), "--dsn", dsn, "--php", phpFlag(t), "--php-workers", "1")
	require.Equal(t, cli.ExitOK, code, stderr)
	require.NotContains(t, stderr, "warning")
	retried, queue, got := lastStepJob(t, c, wf)
	require.NotEqual(t, noPHP, retried)
	require.Equal(t, "llm", queue, "config()'s queue")
	require.Equal(t, 4, got, "#[QueuetyStep]'s max_attempts")

	setWorkflowStatus(t, c, wf, retried, "paused")
	code, stdout, stderr = runCLI("workflow", "resume", itoa(int(wf)), "--dsn", dsn, "--php", phpFlag(t), "--php-workers", "1")
	require.Equal(t, cli.ExitOK, code, stderr)
	require.Contains(t, stdout, "resumed")
	resumed, queue, got := lastStepJob(t, c, wf)
	require.NotEqual(t, retried, resumed)
	require.Equal(t, "llm", queue)
	require.Equal(t, 4, got)
}
