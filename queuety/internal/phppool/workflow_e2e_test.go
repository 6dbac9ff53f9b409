package phppool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/clientstore"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/workflow"
)

// Workflows whose steps are PHP classes (testdata/app.php), dispatched with
// the Go builder and run by a real worker with Workflows on and the pool
// as its fallback: the pool is the engine's step runner.

func dispatchWorkflow(t *testing.T, c *queuety.Client, b *workflow.Builder, initial string) int64 {
	t.Helper()
	v, err := phpjson.DecodeString(initial)
	require.NoError(t, err)
	o, ok := v.AsObject()
	require.True(t, ok)
	d, err := b.Build(o)
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(context.Background(), d)
	require.NoError(t, err)
	return id
}

func waitWorkflow(t *testing.T, c *queuety.Client, id int64, status workflow.Status) *workflow.StatusReport {
	t.Helper()
	var st *workflow.StatusReport
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		st, err = c.WorkflowStatus(context.Background(), id)
		require.NoError(t, err)
		if st.Status == status || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, status, st.Status, "workflow %d: state %s", id, encode(t, st.State))
	return st
}

func encode(t *testing.T, v phpjson.Value) string {
	t.Helper()
	b, err := phpjson.Encode(v)
	require.NoError(t, err)
	return string(b)
}

// startWorkflowWorker runs a worker with Workflows on, the pool as its
// fallback and reg's Go handlers.
func startWorkflowWorker(t *testing.T, c *queuety.Client, reg *queuety.Registry, pool *phppool.Pool) {
	t.Helper()
	reg.SetFallback(pool)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
}

func workflowClient(t *testing.T) *queuety.Client {
	return newClient(t, func(cfg *queuety.Config) {
		cfg.Workflows = true
		cfg.Backoff = queuety.Backoff{List: []int{0}}
	})
}

func TestWorkflowOfPHPAndGoStepsCompletes(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 2}, nil)
	reg := queuety.NewRegistry()
	reg.RegisterStep("GoTriple", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Object().Get("doubled")
		i, _ := n.AsInt64()
		return phpjson.NewObject().Set("tripled", phpjson.Int(3*i)), nil
	})
	startWorkflowWorker(t, c, reg, pool)

	id := dispatchWorkflow(t, c, workflow.New("mixed").Then("AddStep").Then("DoubleStep").Then("GoTriple").Then("EmptyStep"), `{"n":1}`)
	st := waitWorkflow(t, c, id, workflow.StatusCompleted)
	require.Equal(t, `{"n":2,"added_by":"php","saw_steps":true,"doubled":4,"tripled":12}`, encode(t, st.State))
	require.Equal(t, 4, st.CurrentStep)
	require.GreaterOrEqual(t, pool.Stats().Jobs, 3)
}

func TestParallelAndForEachBranchesRunInPHP(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 3}, nil)
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)

	b := workflow.New("fan").
		ForEach("items", "SquareItem", workflow.ResultKey("squares")).
		Parallel("BranchA", "BranchB").
		Then("AddStep")
	id := dispatchWorkflow(t, c, b, `{"n":7,"base":"b","items":[2,3,4]}`)
	st := waitWorkflow(t, c, id, workflow.StatusCompleted)
	got := encode(t, st.State)
	for _, want := range []string{
		`"a":"from A"`, `"n_seen_by_a":7`, `"b":"from B"`, `"n":8`, `"added_by":"php"`,
		`"square":4`, `"square":9`, `"square":16`, `"index":2`, `"base":"b"`,
	} {
		require.Contains(t, got, want)
	}
	require.Equal(t, 3, st.CurrentStep)
}

func TestPHPStepCrashIsRetriedAndAThrowingStepFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	c := workflowClient(t)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	startWorkflowWorker(t, c, queuety.NewRegistry(), pool)

	crash := dispatchWorkflow(t, c, workflow.New("crash").Then("CrashOnceStep").Then("AddStep"), `{"n":0}`)
	throw := dispatchWorkflow(t, c, workflow.New("throw").MaxAttempts(2).Then("ThrowStep"), `{"n":5}`)

	st := waitWorkflow(t, c, crash, workflow.StatusCompleted)
	require.Equal(t, `{"n":1,"recovered":true,"added_by":"php","saw_steps":true}`, encode(t, st.State))
	require.GreaterOrEqual(t, pool.Stats().Crashes, 1)

	waitWorkflow(t, c, throw, workflow.StatusFailed)
	var classes []string
	require.NoError(t, clientstore.Of(c).DB().Select(&classes,
		"SELECT error_class FROM `"+clientstore.Of(c).Tables()["logs"]+"` WHERE workflow_id = ? AND error_class IS NOT NULL ORDER BY id", throw))
	require.Contains(t, classes, "DomainException")
}
