package phppool_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/cli"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/workflow"
)

// stepJob is the newest job of a workflow's step: its queue and
// max_attempts.
func stepJob(t *testing.T, c *queuety.Client, wf int64, step int) (queue string, maxAttempts int) {
	t.Helper()
	row := clientstore.Of(c).DB().QueryRow("SELECT queue, max_attempts FROM `"+clientstore.Of(c).Tables()["jobs"]+
		"` WHERE workflow_id = ? AND step_index = ? ORDER BY id DESC LIMIT 1", wf, step)
	require.NoError(t, row.Scan(&queue, &maxAttempts))
	return queue, maxAttempts
}

// newWorkflowID reads the workflow id `workflow fork|replay --json` print.
func newWorkflowID(t *testing.T, stdout string) int64 {
	t.Helper()
	var v struct {
		ID int64 `json:"workflow_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	require.Positive(t, v.ID, stdout)
	return v.ID
}

// `workflow fork|rewind|replay --php` enqueue a PHP step with its class's
// #[QueuetyStep] max_attempts and config() queue, as retry and resume do;
// without --php the job gets the workflow's settings and the command warns.
func TestWorkflowForkRewindReplayWithPHPReadTheStepClassSettings(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	dsn := c.Config().DSN
	wf := dispatchWorkflow(t, c, workflow.New("history").Then("ConfiguredMetaStep").Then("ConfiguredMetaStep"), `{}`)
	_, defaultAttempts := stepJob(t, c, wf, 0)

	code, stdout, stderr := runCLI("workflow", "fork", itoa(int(wf)), "--dsn", dsn, "--json")
	require.Equal(t, cli.ExitOK, code, stderr)
	require.Contains(t, stderr, "warning: step class ConfiguredMetaStep has no Go handler")
	queue, attempts := stepJob(t, c, newWorkflowID(t, stdout), 0)
	require.Equal(t, "default", queue)
	require.Equal(t, defaultAttempts, attempts, "the workflow's settings")

	code, stdout, stderr = runCLI("workflow", "fork", itoa(int(wf)), "--dsn", dsn, "--json", "--php", phpFlag(t), "--php-workers", "1")
	require.Equal(t, cli.ExitOK, code, stderr)
	require.NotContains(t, stderr, "warning")
	queue, attempts = stepJob(t, c, newWorkflowID(t, stdout), 0)
	require.Equal(t, "llm", queue, "config()'s queue")
	require.Equal(t, 4, attempts, "#[QueuetyStep]'s max_attempts")

	// A recorded completion of step 0 to rewind to; step 1 is enqueued.
	_, err := clientstore.Of(c).DB().Exec("INSERT INTO `"+clientstore.Of(c).Tables()["workflow_events"]+
		"` (workflow_id, step_index, handler, event, state_after) VALUES (?, 0, 'ConfiguredMetaStep', 'step_completed', '{\"done\":1}')", wf)
	require.NoError(t, err)
	code, _, stderr = runCLI("workflow", "rewind", itoa(int(wf)), "0", "--dsn", dsn, "--php", phpFlag(t), "--php-workers", "1")
	require.Equal(t, cli.ExitOK, code, stderr)
	queue, attempts = stepJob(t, c, wf, 1)
	require.Equal(t, "llm", queue)
	require.Equal(t, 4, attempts)

	file := filepath.Join(t.TempDir(), "wf.json")
	code, _, stderr = runCLI("workflow", "export", itoa(int(wf)), "--dsn", dsn, "--output", file)
	require.Equal(t, cli.ExitOK, code, stderr)
	code, stdout, stderr = runCLI("workflow", "replay", file, "--dsn", dsn, "--json", "--php", phpFlag(t), "--php-workers", "1")
	require.Equal(t, cli.ExitOK, code, stderr)
	queue, attempts = stepJob(t, c, newWorkflowID(t, stdout), 1)
	require.Equal(t, "llm", queue)
	require.Equal(t, 4, attempts)
}
