package queuety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

func wfObj(t *testing.T, kv ...any) *phpjson.Object {
	t.Helper()
	o := phpjson.NewObject()
	for i := 0; i < len(kv); i += 2 {
		v, err := phpjson.FromGo(kv[i+1])
		require.NoError(t, err)
		o.Set(kv[i].(string), v)
	}
	return o
}

func intValue(v phpjson.Value) int64 {
	n, _ := v.AsInt64()
	return n
}

// workflowRegistry has the fixtures' PHP step classes as Go step handlers.
func workflowRegistry(t *testing.T) *Registry {
	reg := fixtureRegistry()
	reg.RegisterStep("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		return wfObj(t, "n", intValue(n)+1), nil
	})
	reg.RegisterStep("BranchA", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return wfObj(t, "a", "from A", "shared", "A"), nil
	})
	reg.RegisterStep("BranchB", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return wfObj(t, "b", 2.5, "shared", "B"), nil
	})
	reg.RegisterStep("PlanItems", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return wfObj(t, "items", []any{"x", "y/z", "ü"}), nil
	})
	reg.RegisterItemStep("ItemStep", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		s, _ := item.AsString()
		if s == "ü" {
			return nil, runtimeErr{"cannot handle ü"}
		}
		return wfObj(t, "len", len(s), "item", s), nil
	}, WithMaxAttempts(1))
	reg.RegisterReducer("SumReducer", func(_ context.Context, _ *phpjson.Object, agg *phpjson.Object, _ *phpjson.Object) (*phpjson.Object, error) {
		var total int64
		results, _ := agg.Get("results")
		list, _ := results.AsList()
		for _, r := range list {
			ro, _ := r.AsObject()
			out, _ := ro.Get("output")
			oo, _ := out.AsObject()
			l, _ := oo.Get("len")
			total += intValue(l)
		}
		return wfObj(t, "total_len", total), nil
	})
	return reg
}

func workflowRow(t *testing.T, c *Client, id int64) *store.WorkflowRow {
	t.Helper()
	wf, err := c.store.GetWorkflow(context.Background(), id)
	require.NoError(t, err)
	return wf
}

// insertRecordedWorkflows writes recorded workflows rows as the plugin
// left them.
func insertRecordedWorkflows(t *testing.T, c *Client, rows []map[string]any) {
	t.Helper()
	cols := []string{"id", "name", "status", "state", "current_step", "total_steps", "parent_workflow_id",
		"parent_step_index", "started_at", "completed_at", "failed_at", "error_message", "deadline_at"}
	for _, r := range rows {
		args := make([]any, len(cols))
		for i, col := range cols {
			args[i] = r[col]
		}
		q := fmt.Sprintf("INSERT INTO `%s` (%s) VALUES (%s)", c.store.Tables()["workflows"],
			strings.Join(cols, ","), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
		_, err := c.store.DB().Exec(q, args...)
		require.NoError(t, err)
	}
}

type wfFixture struct {
	Snapshots []struct {
		After     string           `json:"after"`
		Workflows []map[string]any `json:"workflows"`
		Jobs      []map[string]any `json:"jobs"`
		Logs      []map[string]any `json:"logs"`
	} `json:"snapshots"`
}

// TestFixtureWorkflowsReplay runs recorded workflows with the real worker
// (claim windows, Workflows on) one claim at a time and compares the
// workflow state bytes, job rows and log rows after every step with the
// plugin's. With chained steps (the default) a claim runs the steps that
// follow it too, and the rows it leaves are the plugin's final ones.
func TestFixtureWorkflowsReplay(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"wf_sequence.json", "wf_parallel.json", "wf_for_each_quorum_reducer.json"} {
		for _, chained := range []bool{false, true} {
			mode := "claimed"
			if chained {
				mode = "chained"
			}
			t.Run(strings.TrimSuffix(name, ".json")+"/"+mode, func(t *testing.T) {
				t.Parallel()
				loadFixture(t, name) // skips when absent
				var f wfFixture
				readFixtureInto(t, name, &f)
				c := newTestClient(t, func(cfg *Config) {
					cfg.Concurrency = 1
					cfg.Workflows = true
					cfg.PauseCacheTTL = time.Minute // the chain check trusts the claim's read
					if !chained {
						cfg.WorkflowChainSteps = -1
					}
				})
				insertRecordedWorkflows(t, c, f.Snapshots[0].Workflows)
				insertRecorded(t, c, f.Snapshots[0].Jobs)
				insertRecordedLogs(t, c, f.Snapshots[0].Logs)
				w, err := c.NewWorker(workflowRegistry(t))
				require.NoError(t, err)
				compare := func(i int) {
					snap := f.Snapshots[i]
					for _, want := range snap.Workflows {
						got := workflowRow(t, c, int64(want["id"].(float64)))
						require.Equal(t, want["state"], got.State, "%s: state", snap.After)
						require.Equal(t, want["status"], got.Status, "%s: status", snap.After)
						require.Equal(t, int(want["current_step"].(float64)), got.CurrentStep, "%s: current_step", snap.After)
					}
					compareJobs(t, c, snap.After, snap.Jobs)
					compareLogs(t, c, snap.After, snap.Logs)
				}
				if chained {
					for stepOnce(t, w) > 0 {
					}
					compare(len(f.Snapshots) - 1)
					require.Positive(t, w.Stats().Chained, "some step was chained")
					return
				}
				for i := 1; i < len(f.Snapshots); i++ {
					require.Equal(t, 1, stepOnce(t, w), f.Snapshots[i].After)
					compare(i)
				}
				require.Equal(t, 0, stepOnce(t, w), "nothing left to claim")
				require.Zero(t, w.Stats().Chained)
			})
		}
	}
}

func insertRecordedLogs(t *testing.T, c *Client, rows []map[string]any) {
	t.Helper()
	for _, r := range rows {
		l := store.LogRow{Handler: r["handler"].(string), Queue: r["queue"].(string), Event: r["event"].(string)}
		if v, ok := r["workflow_id"].(float64); ok {
			l.WorkflowID = store.Int(int64(v))
		}
		require.NoError(t, c.store.InsertLogs(context.Background(), []store.LogRow{l}))
	}
}

// TestWorkerRunsWorkflows: a worker with Workflows runs Go-built workflows
// to completion next to plain jobs; without the switch it leaves workflow
// steps alone; with it, steps whose class it lacks stay for PHP workers.
func TestWorkerRunsWorkflows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := workflowRegistry(t)
	b := workflow.New("all").Then("PlanItems").
		ForEach("items", "ItemStep", workflow.ResultKey("results"), workflow.ForEachQuorum, workflow.Quorum(2), workflow.Reducer("SumReducer")).
		Parallel("BranchA", "BranchB").Then("IncStep").WithHandlerMetadata(reg.Steps())
	d, err := b.Build(wfObj(t, "n", 0))
	require.NoError(t, err)
	id, existing, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	require.False(t, existing)
	php, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("php").Then("SomePhpStep"), wfObj(t)))
	require.NoError(t, err)
	plain, err := c.Dispatch(ctx, "noop", map[string]any{})
	require.NoError(t, err)

	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "workflow completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	waitFor(t, 5*time.Second, "plain job completed", func() bool { return jobRow(t, c, plain.ID).Status == store.StatusCompleted })
	wf := workflowRow(t, c, id)
	require.Contains(t, wf.State, `"total_len":4`)
	require.Contains(t, wf.State, `"n":1`)
	require.Equal(t, 4, wf.CurrentStep)

	var attempts []any
	require.NoError(t, c.store.DB().Select(&attempts, "SELECT attempt FROM `"+c.store.Tables()["logs"]+"` WHERE workflow_id = ? AND event = 'completed'", id))
	for _, a := range attempts {
		require.Nil(t, a, "workflow completed rows have attempt NULL")
	}
	// A step whose class this binary lacks is left for PHP workers.
	time.Sleep(100 * time.Millisecond)
	var status string
	require.NoError(t, c.store.DB().Get(&status, "SELECT status FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ?", php))
	require.Equal(t, store.StatusPending, status)
}

func TestWorkerWithoutWorkflowsLeavesSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, nil)
	reg := workflowRegistry(t)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("seq").Then("IncStep"), wfObj(t, "n", 0)))
	require.NoError(t, err)
	plain, err := c.Dispatch(ctx, "noop", map[string]any{})
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "plain job completed", func() bool { return jobRow(t, c, plain.ID).Status == store.StatusCompleted })
	time.Sleep(100 * time.Millisecond)
	var status string
	require.NoError(t, c.store.DB().Get(&status, "SELECT status FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ?", id))
	require.Equal(t, store.StatusPending, status)
}

// A failing step is retried with the job's backoff, then buried, and the
// workflow fails with its message.
func TestWorkerWorkflowStepFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.Backoff = Backoff{List: []int{0}} })
	reg := NewRegistry()
	reg.RegisterStep("Flaky", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, errors.New("boom")
	})
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("f").Then("Flaky").MaxAttempts(2), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "workflow failed", func() bool { return workflowRow(t, c, id).Status == "failed" })
	require.Equal(t, "boom", workflowRow(t, c, id).ErrorMessage.String)
	var events []string
	require.NoError(t, c.store.DB().Select(&events, "SELECT event FROM `"+c.store.Tables()["logs"]+"` WHERE workflow_id = ? ORDER BY id", id))
	require.Equal(t, []string{"workflow_started", "started", "failed", "retried", "started", "buried", "workflow_failed"}, events)
}

func mustBuild(t *testing.T, b *workflow.Builder, initial *phpjson.Object) *workflow.Dispatch {
	t.Helper()
	d, err := b.Build(initial)
	require.NoError(t, err)
	return d
}

func readFixtureInto(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

// A step past its time limit fails with Queuety's TimeoutException message.
func TestWorkerWorkflowStepTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.JobTimeout = time.Second })
	reg := NewRegistry()
	reg.RegisterStep("Slow", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("slow").Then("Slow").MaxAttempts(1), wfObj(t)))
	require.NoError(t, err)
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "workflow failed", func() bool { return workflowRow(t, c, id).Status == "failed" })
	require.Equal(t, "Job exceeded maximum execution time of 1 seconds.", workflowRow(t, c, id).ErrorMessage.String)
	var class string
	require.NoError(t, c.store.DB().Get(&class, "SELECT error_class FROM `"+c.store.Tables()["logs"]+"` WHERE workflow_id = ? AND event = 'buried'", id))
	require.Equal(t, `Queuety\Exceptions\TimeoutException`, class)
}
