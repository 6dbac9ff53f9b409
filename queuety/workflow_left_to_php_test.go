package queuety

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

// A repeat step whose condition is a PHP class, on a worker without the PHP
// pool: it is given back untouched (attempt restored, available again in
// leftToPHPDelay) for PHP workers, never failed.
func TestWorkerLeavesPHPRepeatToPHP(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := workflowRegistry(t)
	id := dispatchWF(t, c, workflow.New("loop").Then("IncStep", workflow.Named("inc")).RepeatWhile("inc", workflow.Condition(`App\Below`)), wfObj(t, "n", 0))
	startWorker(t, c, reg)
	jobs := c.store.Tables()["jobs"]
	require.Eventually(t, func() bool {
		var n int
		return c.store.DB().QueryRow("SELECT COUNT(*) FROM `"+c.store.Tables()["logs"]+"` WHERE workflow_id = ? AND event = 'debug'", id).Scan(&n) == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	var status string
	var attempts int
	var wait int
	require.Eventually(t, func() bool {
		return c.store.DB().QueryRow("SELECT status, attempts, TIMESTAMPDIFF(SECOND, NOW(), available_at) FROM `"+jobs+"` WHERE workflow_id = ? AND handler = '__queuety_repeat'", id).
			Scan(&status, &attempts, &wait) == nil && status == "pending"
	}, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, attempts, "the attempt is given back")
	require.Greater(t, wait, 20, "kept out of this worker's claims for a while")
	require.Equal(t, "running", workflowRow(t, c, id).Status)
}
