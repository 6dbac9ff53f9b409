package queuety

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The seed's example with the real worker: the local activity runs in the
// worker that committed the step before it; only that step is claimed.
func TestWorkerRunsLocalActivityWithoutClaimingIt(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	reg.RegisterStep("PlaceOrder", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return phpjson.NewObject().Set("order_id", phpjson.Int(42)), nil
	})
	var calls atomic.Int64
	reg.RegisterLocalActivity("SendReceiptActivity", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		calls.Add(1)
		if err := LocalActivityHeartbeat(ctx, map[string]any{"message": "Polling remote job"}); err != nil {
			return nil, err
		}
		id, _ := s.Get("order_id")
		n, _ := id.AsInt64()
		return phpjson.NewObject().Set("receipt", phpjson.String(fmt.Sprintf("receipt-%d", n))), nil
	})
	w := startWorker(t, c, reg)
	d, err := workflow.New("order").Then("PlaceOrder").
		LocalActivity("SendReceiptActivity", workflow.LocalActivityOptions{MaxAttempts: 3, StartToCloseTimeout: 10, ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5}).
		Build(phpjson.NewObject())
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(context.Background(), d)
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "workflow completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.EqualValues(t, 1, calls.Load())
	require.EqualValues(t, 1, w.Stats().Claimed, "only PlaceOrder went through the claim")

	acts, err := c.LocalActivities(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "local", acts[0].ExecutionMode)
	require.True(t, acts[0].QueueBypassed)
	require.Equal(t, "completed", acts[0].Status)
	require.Len(t, acts[0].Attempts, 1)
	require.Equal(t, w.ID(), *acts[0].Attempts[0].LeaseOwner, "the advancing worker holds the lease")
	job := jobRow(t, c, acts[0].JobID)
	require.Equal(t, 1, job.Attempts)
	require.Equal(t, w.ID(), job.ReservedBy.String)

	m, err := c.ActivityMetrics(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, m.Local)
	require.EqualValues(t, 1, m.LocalAttempts)
	require.EqualValues(t, 0, m.LocalOpen)
	require.EqualValues(t, 0, m.QueuedOpen)
}

func TestDispatchWorkflowRejectsLocalActivityRouting(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	d, err := workflow.New("x").LocalActivity("A", workflow.LocalActivityOptions{}).Build(phpjson.NewObject())
	require.NoError(t, err)
	st, err := workflow.ParseState(d.Workflow.State)
	require.NoError(t, err)
	st.Steps()[0].Object().Set("worker_session", phpjson.String("gpu"))
	d.Workflow.State, err = st.Encode()
	require.NoError(t, err)
	_, _, err = c.DispatchWorkflow(context.Background(), d)
	require.ErrorIs(t, err, workflow.ErrLocalActivityRouting)
}

// localChildEnv starts this test binary as a worker process that runs the
// local activity "Slow" (see init below).
const localChildEnv = "QUEUETY_TEST_LOCAL_CHILD"

// init turns the test binary into a worker process when localChildEnv is
// set (before TestMain, which belongs to the other process tests).
func init() {
	if os.Getenv(localChildEnv) == "" {
		return
	}
	os.Exit(runLocalChild())
}

// runLocalChild serves workflows whose step "Prep" is followed by the
// local activity "Slow": Slow appends "start <attempt-row-count>" to
// QUEUETY_TEST_OUT and, with QUEUETY_TEST_LOCAL_BLOCK, never returns (the
// test kills the process); otherwise it appends "done" and returns.
func runLocalChild() int {
	out, err := os.OpenFile(os.Getenv("QUEUETY_TEST_OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	block := os.Getenv("QUEUETY_TEST_LOCAL_BLOCK") != ""
	reg := NewRegistry()
	reg.RegisterStep("Prep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return phpjson.NewObject().Set("prepared", phpjson.Bool(true)), nil
	})
	reg.RegisterLocalActivity("Slow", func(ctx context.Context, _ *workflow.State) (*phpjson.Object, error) {
		_, _ = out.WriteString("start\n")
		if block {
			<-ctx.Done() // until SIGKILL
			return nil, ctx.Err()
		}
		_, _ = out.WriteString("done\n")
		return phpjson.NewObject().Set("slow", phpjson.String("ok")), nil
	})
	cfg := Config{
		Workflows:      true,
		DSN:            os.Getenv("QUEUETY_TEST_CHILD_DSN"),
		Concurrency:    4,
		StaleTimeout:   2 * time.Second,
		RescueSchedule: "@every 1s",
		PollInterval:   20 * time.Millisecond,
		Backoff:        Backoff{List: []int{0}},
		Logger:         testLogger(),
	}
	return serveChild(cfg, reg)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	return lines
}

// kill -9 of the worker mid-attempt: the lease lapses, the stale sweep of a
// new worker rescues the step job, the attempt that claims it closes the
// interrupted one as expired and schedules a retry with
// retry_reason=cold_replay, and the activity completes exactly once.
func TestLocalActivityKilledWorkerColdReplays(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test")
	}
	c := newTestClient(t, nil)
	d, err := workflow.New("crash").Then("Prep").
		LocalActivity("Slow", workflow.LocalActivityOptions{MaxAttempts: 3, Backoff: []int64{0}}).
		Build(phpjson.NewObject())
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(context.Background(), d)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "slow.out")
	start := func(block bool) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), localChildEnv+"=1", "QUEUETY_TEST_CHILD_DSN="+c.cfg.DSN, "QUEUETY_TEST_OUT="+out)
		if block {
			cmd.Env = append(cmd.Env, "QUEUETY_TEST_LOCAL_BLOCK=1")
		}
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	a := start(true)
	waitFor(t, 30*time.Second, "the first attempt running", func() bool { return len(readLines(t, out)) == 1 })
	require.NoError(t, a.Process.Kill()) // SIGKILL: no shutdown code runs
	_, _ = a.Process.Wait()
	acts, err := c.LocalActivities(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "running", acts[0].Status, "the killed attempt left no terminal record")

	start(false)
	waitFor(t, 60*time.Second, "workflow completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, []string{"start", "start", "done"}, readLines(t, out), "completed once, after the interrupted attempt")

	acts, err = c.LocalActivities(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, acts, 1, "one execution")
	x := acts[0]
	require.Equal(t, "completed", x.Status)
	require.Len(t, x.Attempts, 2)
	require.Equal(t, "expired", x.Attempts[0].Status)
	require.Equal(t, "completed", x.Attempts[1].Status)
	require.Equal(t, "cold_replay", *x.Attempts[1].RetryReason)
	b, err := phpjson.Encode(x.History)
	require.NoError(t, err)
	var hist []struct {
		Event   string         `json:"event"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(b, &hist))
	var names []string
	for _, h := range hist {
		names = append(names, h.Event)
		if h.Event == workflow.ActivityRetryScheduled {
			require.Equal(t, "cold_replay", h.Payload["retry_reason"])
		}
	}
	require.Equal(t, []string{"ActivityScheduled", "ActivityStarted", "ActivityRetryScheduled", "ActivityStarted", "ActivityCompleted"}, names)
	require.Zero(t, countStatus(t, c, store.StatusBuried), "nothing buried by the sweep")
}

// Many local chains at once on two workers of their own pools (two
// processes' worth): with one pipeline connection each, most outcome
// transactions find it taken and run unpipelined beside the pipelined
// ones. Every step's handler runs exactly once and every execution
// completes on its first attempt.
func TestLocalActivitiesConcurrentPipelinedAndNot(t *testing.T) {
	t.Parallel()
	const workflows, steps = 40, 5
	first := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.Concurrency = 8; cfg.MaxConns = 4 })
	second, err := Open(context.Background(), first.Config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close() })
	require.Equal(t, 1, first.pipe.Stats().MaxOpenConnections)
	var runs sync.Map // "workflow/step" -> *atomic.Int64
	reg := NewRegistry()
	reg.RegisterLocalActivity("CountedStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		k, _ := s.Get("k")
		key, _ := k.AsInt64()
		n, _ := s.Get("n")
		step, _ := n.AsInt64()
		c, _ := runs.LoadOrStore(fmt.Sprintf("%d/%d", key, step), new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
		return phpjson.NewObject().Set("n", phpjson.Int(step+1)), nil
	})
	startWorker(t, first, reg)
	startWorker(t, second, reg)
	b := workflow.New("counted")
	for range steps {
		b.LocalActivity("CountedStep", workflow.LocalActivityOptions{})
	}
	ids := make([]int64, workflows)
	for i := range ids {
		d, err := b.Build(phpjson.NewObject().Set("k", phpjson.Int(int64(i))).Set("n", phpjson.Int(0)))
		require.NoError(t, err)
		ids[i], _, err = first.DispatchWorkflow(context.Background(), d)
		require.NoError(t, err)
	}
	waitFor(t, 60*time.Second, "every workflow completed", func() bool {
		n, err := first.store.CountWorkflows(context.Background(), "completed")
		require.NoError(t, err)
		return n == workflows
	})
	for i := range workflows {
		for s := range steps {
			c, ok := runs.Load(fmt.Sprintf("%d/%d", i, s))
			require.True(t, ok, "workflow %d step %d ran", i, s)
			require.EqualValues(t, 1, c.(*atomic.Int64).Load(), "workflow %d step %d ran once", i, s)
		}
	}
	for _, id := range ids {
		acts, err := first.LocalActivities(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, acts, steps)
		for _, a := range acts {
			require.Equal(t, "completed", a.Status)
			require.Len(t, a.Attempts, 1)
		}
	}
}
