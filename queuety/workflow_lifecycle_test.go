package queuety

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

func dispatchWF(t *testing.T, c *Client, b *workflow.Builder, initial *phpjson.Object) int64 {
	t.Helper()
	d, err := b.Build(initial)
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(context.Background(), d)
	require.NoError(t, err)
	return id
}

func waitStatus(t *testing.T, c *Client, id int64, status string) {
	t.Helper()
	waitFor(t, 10*time.Second, "workflow "+status, func() bool { return workflowRow(t, c, id).Status == status })
}

// Cancel (with compensations and on_cancel), pause, resume and retry
// through the Client, with a real worker running the steps.
func TestClientWorkflowLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := workflowRegistry(t)
	var mu sync.Mutex
	var ran []string
	record := func(name string) workflow.CompensationFunc {
		return func(_ context.Context, s *phpjson.Object, _ *phpjson.Object) error {
			b, _ := phpjson.Encode(phpjson.ObjectValue(s))
			mu.Lock()
			ran = append(ran, name+" "+string(b))
			mu.Unlock()
			return nil
		}
	}
	reg.RegisterCompensation("Undo", record("Undo"))
	reg.RegisterCompensation("OnCancelled", record("OnCancelled"))
	var fail atomic.Bool
	fail.Store(true)
	reg.RegisterStep("Flaky", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		if fail.Load() {
			return nil, runtimeErr{"flaky"}
		}
		return wfObj(t, "fixed", true), nil
	}, WithMaxAttempts(1))
	// Gate holds the second step of the cancelled workflow until it is
	// cancelled.
	gate := make(chan struct{})
	reg.RegisterStep("Gate", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return wfObj(t), nil
	})
	startWorker(t, c, reg)

	// Cancel while the second step runs.
	cancelled := dispatchWF(t, c, workflow.New("cancel").Then("IncStep").CompensateWith("Undo").Then("Gate").Then("IncStep").
		OnCancel("OnCancelled"), wfObj(t, "n", 0))
	waitFor(t, 10*time.Second, "gate running", func() bool {
		return workflowRow(t, c, cancelled).CurrentStep == 1 && countStatus(t, c, "processing") == 1
	})
	require.NoError(t, c.CancelWorkflow(ctx, cancelled, reg))
	close(gate)
	st, err := c.WorkflowStatus(ctx, cancelled)
	require.NoError(t, err)
	require.Equal(t, workflow.StatusCancelled, st.Status)
	require.NotNil(t, st.CompletedAt)
	mu.Lock()
	require.Equal(t, []string{`Undo {"n":1}`, `OnCancelled {"n":1}`}, ran)
	mu.Unlock()
	err = c.CancelWorkflow(ctx, cancelled, reg)
	require.True(t, workflow.IsLifecycleError(err))
	require.ErrorIs(t, c.CancelWorkflow(ctx, 99999, reg), ErrWorkflowNotFound)
	// The gate's late completion is refused (guard A buries it).
	waitFor(t, 10*time.Second, "gate settled", func() bool { return countStatus(t, c, "processing") == 0 })
	require.Equal(t, "cancelled", workflowRow(t, c, cancelled).Status)

	// Retry a failed step.
	failed := dispatchWF(t, c, workflow.New("retry").Then("IncStep").Then("Flaky").WithHandlerMetadata(reg.Steps()), wfObj(t, "n", 0))
	waitStatus(t, c, failed, "failed")
	fail.Store(false)
	require.NoError(t, c.RetryWorkflow(ctx, failed, reg))
	waitStatus(t, c, failed, "completed")
	st, err = c.WorkflowStatus(ctx, failed)
	require.NoError(t, err)
	b, err := json.Marshal(st.State)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1,"fixed":true}`, string(b))
	require.True(t, workflow.IsLifecycleError(c.RetryWorkflow(ctx, failed, reg)))

	// Pause a workflow that has not started (no worker claims Unknown),
	// then resume it.
	paused := dispatchWF(t, c, workflow.New("pause").Then("Unknown").Then("IncStep"), wfObj(t, "n", 0))
	require.NoError(t, c.PauseWorkflow(ctx, paused))
	require.True(t, workflow.IsLifecycleError(c.PauseWorkflow(ctx, paused)), "already paused")
	st, err = c.WorkflowStatus(ctx, paused)
	require.NoError(t, err)
	require.Equal(t, workflow.StatusPaused, st.Status)
	require.NoError(t, c.ResumeWorkflow(ctx, paused, reg))
	require.True(t, workflow.IsLifecycleError(c.ResumeWorkflow(ctx, paused, reg)))
	require.Equal(t, "running", workflowRow(t, c, paused).Status)

	list, err := c.ListWorkflows(ctx, WorkflowFilter{Status: "completed"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, failed, list[0].WorkflowID)
	tl, err := c.WorkflowTimeline(ctx, failed, 0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, tl)
	doc, err := c.ExportWorkflow(ctx, failed)
	require.NoError(t, err)
	require.Equal(t, "workflow", doc.Keys()[0])
}

// StaleRecoveryTest (workflow cases): with Workflows on, a stale step is
// retried; at max attempts it is buried and its workflow fails.
func TestRecoverStaleWorkflowSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := workflowRegistry(t)
	jobs := c.store.Tables()["jobs"]
	stale := func(id int64, attempts int) {
		_, err := c.store.DB().Exec("UPDATE `"+jobs+"` SET status = 'processing', attempts = ?, reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", attempts, id)
		require.NoError(t, err)
	}
	wfJob := func(id int64) *store.JobRow {
		var j store.JobRow
		require.NoError(t, c.store.DB().Unsafe().Get(&j, "SELECT * FROM `"+jobs+"` WHERE workflow_id = ? ORDER BY id LIMIT 1", id))
		return &j
	}

	retried := dispatchWF(t, c, workflow.New("r").Then("IncStep"), wfObj(t, "n", 0))
	stale(wfJob(retried).ID, 1)
	dead := dispatchWF(t, c, workflow.New("d").Then("IncStep").Then("IncStep"), wfObj(t, "n", 0))
	stale(wfJob(dead).ID, 3)

	res, err := c.RecoverStale(ctx, reg)
	require.NoError(t, err)
	require.Equal(t, Rescued{Retried: 1, Buried: 1}, res)
	require.Equal(t, store.StatusPending, wfJob(retried).Status)
	require.Equal(t, "running", workflowRow(t, c, retried).Status)
	j := wfJob(dead)
	require.Equal(t, store.StatusBuried, j.Status)
	require.Equal(t, store.StaleMessage, j.ErrorMessage.String)
	wf := workflowRow(t, c, dead)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, store.StaleMessage, wf.ErrorMessage.String)
	require.Equal(t, []string{"buried", "workflow_failed"}, logEvents(jobLogs(t, c, j.ID)))

	// Without Workflows, workflow steps are left to PHP's sweep.
	plain := newTestClient(t, nil)
	id := dispatchWF(t, plain, workflow.New("p").Then("IncStep"), wfObj(t, "n", 0))
	var jid int64
	require.NoError(t, plain.store.DB().Get(&jid, "SELECT id FROM `"+plain.store.Tables()["jobs"]+"` WHERE workflow_id = ?", id))
	_, err = plain.store.DB().Exec("UPDATE `"+plain.store.Tables()["jobs"]+"` SET status = 'processing', attempts = 3, reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", jid)
	require.NoError(t, err)
	res, err = plain.RecoverStale(ctx, reg)
	require.NoError(t, err)
	require.Zero(t, res.Retried+res.Buried)
}

// WorkflowDeadlineTest through the worker's deadline service.
func TestWorkerChecksDeadlines(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.DeadlineInterval = 20 * time.Millisecond })
	reg := workflowRegistry(t)
	var called atomic.Int32
	reg.RegisterCompensation("OnLate", func(context.Context, *phpjson.Object, *phpjson.Object) error {
		called.Add(1)
		return nil
	})
	// Unknown is no handler of this worker: the workflow just sits running.
	id := dispatchWF(t, c, workflow.New("late").Then("Unknown").MustCompleteWithin(time.Hour).OnDeadline("OnLate"), wfObj(t, "n", 0))
	_, err := c.store.DB().Exec("UPDATE `"+c.store.Tables()["workflows"]+"` SET deadline_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", id)
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitStatus(t, c, id, "failed")
	require.Equal(t, "Deadline exceeded", workflowRow(t, c, id).ErrorMessage.String)
	require.Equal(t, int32(1), called.Load())
}
