package queuety

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// A Go error is named by its type the way get_class names a class, with no
// pointer "*": the same class on a plain job, a workflow step and a local
// activity (earlier builds wrote "*errors.errorString" for the first two
// and "errors.errorString" for the third).
func TestGoErrorClassIsItsTypeName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	reg.HandleFunc("fails", func(context.Context, *Job) error { return errors.New("boom") })
	reg.RegisterStep("FailingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, errors.New("boom")
	})
	d, err := c.Dispatch(ctx, "fails", nil, MaxAttempts(1))
	require.NoError(t, err)
	wf, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("f").Then("FailingStep").MaxAttempts(1), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "burial", func() bool { return jobRow(t, c, d.ID).Status == store.StatusBuried })
	waitFor(t, 10*time.Second, "workflow failed", func() bool { return workflowRow(t, c, wf).Status == "failed" })
	require.Equal(t, "errors.errorString", jobLogs(t, c, d.ID)[1].ErrorClass.String)
	require.Equal(t, "errors.errorString", buriedStepLog(t, c, wf).ErrorClass.String)
}

// A panicking workflow step is recorded as a panicking job is: message
// "panic: <value>", error_class "panic", error_trace the stack. Earlier
// builds wrote the stack into the message (and so into the workflow's
// error_message) and named the class "*errors.errorString".
func TestStepPanicIsRecordedLikeAJobPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	reg.RegisterStep("PanickingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		panic("kaboom")
	})
	wf, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("p").Then("PanickingStep").MaxAttempts(1), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "workflow failed", func() bool { return workflowRow(t, c, wf).Status == "failed" })
	require.Equal(t, "panic: kaboom", workflowRow(t, c, wf).ErrorMessage.String)
	l := buriedStepLog(t, c, wf)
	require.Equal(t, "panic: kaboom", l.ErrorMessage.String)
	require.Equal(t, "panic", l.ErrorClass.String)
	require.Contains(t, l.ErrorTrace.String, "error_rows_test.go")
}

// buriedStepLog is the `buried` log row of the workflow's step job.
func buriedStepLog(t *testing.T, c *Client, workflowID int64) store.LogRow {
	t.Helper()
	var l store.LogRow
	require.NoError(t, c.store.DB().Get(&l, "SELECT * FROM `"+c.store.Tables()["logs"]+"` WHERE workflow_id = ? AND event = 'buried'", workflowID))
	return l
}
