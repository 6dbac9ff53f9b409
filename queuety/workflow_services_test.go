package queuety

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

func fastServices(cfg *Config) {
	cfg.Workflows = true
	cfg.WaitSweepInterval = 50 * time.Millisecond
	cfg.SignalPollInterval = 50 * time.Millisecond
}

// A signal row inserted by plain SQL, as PHP's bridge would, is picked up
// by the worker's signal poller.
func TestWorkerSignalPoller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, fastServices)
	reg := workflowRegistry(t)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("w").WaitForSignal("approval").Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "parked", func() bool { return workflowRow(t, c, id).Status == "waiting_for_signal" })
	// The slot is released right after the commit that parked it.
	waitFor(t, time.Second, "a waiting workflow holds no worker slot", func() bool { return w.Stats().Running == 0 })

	_, err = c.store.DB().Exec("INSERT INTO `"+c.store.Tables()["signals"]+"` (workflow_id, signal_name, payload) VALUES (?, 'approval', '{\"by\":\"php\"}')", id)
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, `{"n":1,"by":"php"}`, publicState(t, c, id))
}

// A waiter whose wake-up was missed (its dependency completed by a process
// that does not reconcile) is resumed by the worker's wait sweeper.
func TestWorkerWaitSweeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, fastServices)
	reg := workflowRegistry(t)
	dep, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("php_dep").Then("SomePhpStep"), wfObj(t)))
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(dep), workflow.ResultKey("dep")), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "parked", func() bool { return workflowRow(t, c, id).Status == "waiting_for_workflows" })
	_, err = c.store.DB().Exec("UPDATE `"+c.store.Tables()["workflows"]+"` SET status = 'completed', state = '{\"by\":\"php\"}' WHERE id = ?", dep)
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "resumed by the sweeper", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, `{"dep":{"by":"php"}}`, publicState(t, c, id))
}

// 500 children finishing concurrently under 4 workers wake their waiting
// parent exactly once (issue 3's race criterion).
func TestWorkersWakeParentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 500
	c := newTestClient(t, func(cfg *Config) {
		fastServices(cfg)
		cfg.Concurrency = 8
	})
	reg := workflowRegistry(t)
	reg.RegisterStep("Plan", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		items := make([]any, n)
		for i := range items {
			items[i] = fmt.Sprint("t", i)
		}
		return wfObj(t, "tasks", items), nil
	})
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("fan").Then("Plan").
		StartAgents("tasks", workflow.New("agent").Then("IncStep"), workflow.GroupKey("g")).
		WaitForAgentGroup("g").Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		startWorker(t, c, reg)
	}
	waitFor(t, 90*time.Second, "completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	var resumed int
	require.NoError(t, c.store.DB().Get(&resumed, "SELECT COUNT(*) FROM `"+c.store.Tables()["workflow_events"]+"` WHERE workflow_id = ? AND event = 'workflow_resumed'", id))
	require.Equal(t, 1, resumed)
	st, err := workflow.ParseState([]byte(workflowRow(t, c, id).State))
	require.NoError(t, err)
	results, _ := st.Get("agent_results")
	ro, _ := results.AsObject()
	require.Equal(t, n, ro.Len())
}

func TestWorkflowServicesStartStop(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	e := c.engine(nil)
	s := newWaitSweeper(e, time.Hour, nil, nil)
	s.Start(context.Background())
	s.Start(context.Background()) // idempotent
	s.Stop()
	s.Stop()
	p := newSignalPoller(e, time.Hour, nil, nil)
	p.Start(context.Background())
	p.Stop()
	n, err := p.RunOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	res, err := s.RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, workflow.SweepResult{}, res)
}
