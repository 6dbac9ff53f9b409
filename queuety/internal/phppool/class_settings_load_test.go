package phppool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/workflow"
)

// The parity review's E4 under load: one PHP process, a backlog of 100
// PHP jobs of 0.4 s all claimed and queued for it, and a workflow whose
// delay step is followed by a PHP class with config() (queue llm, 7
// attempts, group llm/1, cost 5). The delay placeholder's transaction
// writes the next step's job with those settings, and long before the
// backlog has run: the class is read before the transaction opens, on a
// PHP process of its own. Before, the read waited behind the backlog for
// its 30 s limit and the job was written with 3 / no group / 1.
func TestStepJobKeepsClassSettingsBehindABacklog(t *testing.T) {
	t.Parallel()
	c := newClient(t, func(cfg *queuety.Config) {
		cfg.Workflows = true
		cfg.Concurrency = 110
		cfg.Queues = []string{"wf", "bulk"}
		cfg.ShutdownGrace = time.Second
	})
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	ctx := context.Background()
	const backlog = 100
	for range backlog {
		_, err := c.Dispatch(ctx, "sleeps", map[string]any{"ms": 400}, queuety.OnQueue("bulk"))
		require.NoError(t, err)
	}
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)
	jobs := "`" + clientstore.Of(c).Tables()["jobs"] + "`"
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, clientstore.Of(c).DB().Get(&n, q, args...))
		return n
	}
	waitFor(t, 20*time.Second, "the backlog claimed", func() bool {
		return count("SELECT COUNT(*) FROM "+jobs+" WHERE handler = 'sleeps' AND status = 'processing'") >= backlog-5
	})

	id := dispatchWorkflow(t, c, workflow.New("e4").OnQueue("wf").Delay(time.Second).Then("LoadConfiguredStep"), `{}`)
	waitFor(t, 60*time.Second, "the step job", func() bool {
		return count("SELECT COUNT(*) FROM "+jobs+" WHERE workflow_id = ? AND step_index = 1", id) == 1
	})
	var row struct {
		Queue       string `db:"queue"`
		MaxAttempts int    `db:"max_attempts"`
		Group       string `db:"concurrency_group"`
		Limit       int    `db:"concurrency_limit"`
		Cost        int    `db:"cost_units"`
	}
	require.NoError(t, clientstore.Of(c).DB().Get(&row, "SELECT queue, max_attempts, COALESCE(concurrency_group, '') AS concurrency_group, "+
		"COALESCE(concurrency_limit, 0) AS concurrency_limit, cost_units FROM "+jobs+" WHERE workflow_id = ? AND step_index = 1", id))
	require.Equal(t, "llm", row.Queue)
	require.Equal(t, 7, row.MaxAttempts)
	require.Equal(t, "llm", row.Group)
	require.Equal(t, 1, row.Limit)
	require.Equal(t, 5, row.Cost)
	// Quickly: written while most of the backlog still waited (behind
	// it, the write came after some 75 of them, 30 s).
	done := count("SELECT COUNT(*) FROM "+jobs+" WHERE handler = 'sleeps' AND status = 'completed' AND completed_at <= "+
		"(SELECT created_at FROM "+jobs+" WHERE workflow_id = ? AND step_index = 1)", id)
	require.Less(t, done, backlog/2, "backlog jobs completed before the step job was written")
	require.Equal(t, 1, count("SELECT COUNT(*) FROM "+jobs+" WHERE workflow_id = ? AND step_index = 0 AND status = 'completed' AND attempts = 1", id), "the delay placeholder ran once")
}
