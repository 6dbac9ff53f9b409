package phppool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/workflow"
)

// A workflow's reducer, repeat condition, compensation and on_cancel
// handler are PHP classes (testdata/app.php) without Go implementations:
// the engine calls them through the pool, the worker's and the client's.

func TestPHPReducerConditionAndCompensationsRunInThePool(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 2}, nil)
	reg := queuety.NewRegistry()
	startWorkflowWorker(t, c, reg, pool)
	marker := filepath.Join(t.TempDir(), "marker")

	b := workflow.New("callables").
		ForEach("items", "SquareItem", workflow.ResultKey("squares"), workflow.Reducer("SumSquaresReducer")).
		Then("AddStep", workflow.Named("inc")).
		RepeatUntil("inc", workflow.Condition("ReachedCondition")).
		Then("DoubleStep").CompensateWith("MarkerCompensation").
		WaitForSignal("never").
		OnCancel("MarkerCompensation")
	id := dispatchWorkflow(t, c, b, `{"n":0,"base":"b","items":[2,3],"marker":`+quote(marker)+`}`)

	st := waitWorkflow(t, c, id, workflow.StatusWaitingForSignal)
	got := encode(t, st.State)
	for _, want := range []string{
		`"sum":13`, `"reducer_saw_squares":true`, `"reducer_saw_reserved":false`, // the reducer
		`"n":3`, // AddStep ran until ReachedCondition matched n >= 3
		`"doubled":6`,
	} {
		require.Contains(t, got, want)
	}
	_, err := os.Stat(marker)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing compensated yet")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.CancelWorkflow(ctx, id, reg))
	b2, err := os.ReadFile(marker)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b2)), "\n")
	require.Len(t, lines, 2, "the compensation, then on_cancel: %s", b2)
	require.Contains(t, lines[0], `"doubled":6`, "the compensation gets the snapshot taken after its step")
	require.NotContains(t, lines[0], `"_`, "the public state")
	require.Contains(t, lines[1], `"doubled":6`)

	row, err := clientstore.Of(c).GetWorkflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, string(workflow.StatusCancelled), row.Status)
	require.Contains(t, row.State, `"_compensated":true`)
	require.Contains(t, row.State, `"_compensation_cause":"cancel"`)
}

func TestFailingPHPCompensationIsLoggedAndAMissingReducerFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)

	comp := dispatchWorkflow(t, c, workflow.New("comp").MaxAttempts(1).CompensateOnFailure().
		Then("AddStep").CompensateWith("ThrowingCompensation").
		Then("ThrowStep"), `{"n":0}`)
	reducer := dispatchWorkflow(t, c, workflow.New("reducer").MaxAttempts(1).
		ForEach("items", "SquareItem", workflow.Reducer("NoSuchReducer")), `{"items":[1]}`)

	waitWorkflow(t, c, comp, workflow.StatusFailed)
	logs := clientstore.Of(c).Tables()["logs"]
	var msgs []string
	require.Eventually(t, func() bool {
		msgs = nil
		require.NoError(t, clientstore.Of(c).DB().Select(&msgs,
			"SELECT error_message FROM `"+logs+"` WHERE workflow_id = ? AND handler = 'ThrowingCompensation' AND error_message IS NOT NULL", comp))
		return len(msgs) > 0
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"compensation failed"}, msgs)

	waitWorkflow(t, c, reducer, workflow.StatusFailed)
	var errs []string
	require.NoError(t, clientstore.Of(c).DB().Select(&errs,
		"SELECT error_message FROM `"+logs+"` WHERE workflow_id = ? AND error_message IS NOT NULL", reducer))
	require.Contains(t, strings.Join(errs, "\n"), "For-each reducer class 'NoSuchReducer' not found.")
}
