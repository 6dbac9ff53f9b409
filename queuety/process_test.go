package queuety

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// child is a worker in its own OS process (this test binary in child mode).
type child struct {
	cmd  *exec.Cmd
	out  string
	done chan error
}

func startChild(t *testing.T, dsn, out string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUEUETY_TEST_CHILD=worker", "QUEUETY_TEST_CHILD_DSN="+dsn, "QUEUETY_TEST_OUT="+out)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	ch := &child{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { ch.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return ch
}

// stop sends SIGTERM and waits for the exit, returning how long it took.
func (c *child) stop(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.done:
		require.NoError(t, err, "worker exit status")
	case <-time.After(within):
		t.Fatalf("worker did not exit within %s of SIGTERM", within)
	}
	return time.Since(start)
}

// invocations reads "start|done <id> <attempt>" lines from the out files.
func invocations(t *testing.T, files ...string) (starts, dones map[int64]int) {
	t.Helper()
	starts, dones = map[int64]int{}, map[int64]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var kind string
			var id int64
			var attempt int
			_, err := fmt.Sscanf(sc.Text(), "%s %d %d", &kind, &id, &attempt)
			require.NoError(t, err, "line %q", sc.Text())
			if kind == "start" {
				starts[id]++
			} else {
				dones[id]++
			}
		}
		fh.Close()
	}
	return starts, dones
}

func insertRecordJobs(t *testing.T, c *Client, n, ms int) {
	t.Helper()
	jobs := make([]store.InsertJob, n)
	for i := range jobs {
		jobs[i] = store.InsertJob{Queue: DefaultQueue, Handler: "record", Payload: []byte(fmt.Sprintf(`{"ms":%d,"i":%d}`, ms, i)), MaxAttempts: 3}
	}
	_, err := c.store.InsertJobs(context.Background(), jobs)
	require.NoError(t, err)
}

func TestFourWorkerProcessesRunEachJobExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process test")
	}
	c := newTestClient(t, nil)
	const jobs = 20000
	insertRecordJobs(t, c, jobs, 0)
	dir := t.TempDir()
	var kids []*child
	var outs []string
	for i := 0; i < 4; i++ {
		out := filepath.Join(dir, fmt.Sprintf("w%d.out", i))
		outs = append(outs, out)
		kids = append(kids, startChild(t, c.cfg.DSN, out, "QUEUETY_TEST_CONCURRENCY=32"))
	}
	waitFor(t, 3*time.Minute, "20000 jobs completed", func() bool { return countStatus(t, c, store.StatusCompleted) == jobs })
	for _, k := range kids {
		k.stop(t, 15*time.Second)
	}
	starts, dones := invocations(t, outs...)
	require.Len(t, starts, jobs, "every job ran")
	for id, n := range starts {
		require.Equal(t, 1, n, "job %d ran %d times", id, n)
		require.Equal(t, 1, dones[id], "job %d finished %d times", id, dones[id])
	}
	// Per-process share, to show the four really shared the work.
	for _, o := range outs {
		s, _ := invocations(t, o)
		require.NotZero(t, len(s), "worker %s ran nothing", o)
		t.Logf("%s ran %d jobs", filepath.Base(o), len(s))
	}
	n, err := c.store.CountLogEvents(context.Background(), store.EventCompleted)
	require.NoError(t, err)
	require.Equal(t, jobs, n)
	require.Zero(t, countStatus(t, c, store.StatusPending)+countStatus(t, c, store.StatusProcessing))
}

func TestKilledWorkerJobsCompleteAfterRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test")
	}
	c := newTestClient(t, nil)
	const jobs = 60
	insertRecordJobs(t, c, jobs, 400)
	dir := t.TempDir()
	env := []string{"QUEUETY_TEST_CONCURRENCY=10", "QUEUETY_TEST_STALE_MS=2000", "QUEUETY_TEST_RESCUE=@every 1s"}
	a := startChild(t, c.cfg.DSN, filepath.Join(dir, "a.out"), env...)
	waitFor(t, 30*time.Second, "first worker mid-flight", func() bool {
		s, d := invocations(t, filepath.Join(dir, "a.out"))
		return len(d) >= 10 && len(s) > len(d)
	})
	require.NoError(t, a.cmd.Process.Kill()) // SIGKILL: no shutdown code runs
	<-a.done
	// In flight at the kill: processing rows (their window committed), or
	// rows of an open window, which the server rolls back to pending.
	t.Logf("%d jobs left processing by the kill", countStatus(t, c, store.StatusProcessing))
	b := startChild(t, c.cfg.DSN, filepath.Join(dir, "b.out"), env...)
	waitFor(t, 60*time.Second, "every job completed", func() bool { return countStatus(t, c, store.StatusCompleted) == jobs })
	b.stop(t, 15*time.Second)
	require.Zero(t, countStatus(t, c, store.StatusBuried), "nothing wrongly buried")
	starts, dones := invocations(t, filepath.Join(dir, "a.out"), filepath.Join(dir, "b.out"))
	require.Len(t, dones, jobs)
	rerun := 0
	for id := range starts {
		if starts[id] > 1 {
			rerun++
		}
	}
	t.Logf("%d jobs were in flight at the kill and ran again (at-least-once)", rerun)
	require.NotZero(t, rerun)
	require.LessOrEqual(t, rerun, 20, "only what was in flight runs twice")
}

func TestSigtermUnderLoadFinishesInFlightAndExits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signal test")
	}
	c := newTestClient(t, nil)
	const jobs = 300
	insertRecordJobs(t, c, jobs, 250)
	out := filepath.Join(t.TempDir(), "w.out")
	w := startChild(t, c.cfg.DSN, out, "QUEUETY_TEST_CONCURRENCY=20", "QUEUETY_TEST_GRACE_MS=5000")
	waitFor(t, 30*time.Second, "load", func() bool {
		_, d := invocations(t, out)
		return len(d) >= 40
	})
	took := w.stop(t, 10*time.Second)
	require.Less(t, took, 5*time.Second+2*time.Second, "exit within the grace")
	starts, dones := invocations(t, out)
	for id := range starts {
		require.Equal(t, 1, dones[id], "job %d started but did not finish", id)
	}
	completed := countStatus(t, c, store.StatusCompleted)
	require.Equal(t, len(dones), completed, "every finished job is recorded completed")
	require.Zero(t, countStatus(t, c, store.StatusProcessing), "no claim left behind")
	var stray int
	require.NoError(t, c.store.DB().Get(&stray, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE status = 'pending' AND attempts <> 0"))
	require.Zero(t, stray, "unstarted jobs keep their attempts unspent")
	started, err := c.store.CountLogEvents(context.Background(), store.EventStarted)
	require.NoError(t, err)
	require.Equal(t, completed, started, "no started log without its job running")
	require.Less(t, completed, jobs, "SIGTERM came mid-load")
	t.Logf("exit took %s; %d completed, %d left pending", took, completed, jobs-completed)
}

// Issue 3's race: 500 agent workflows finishing at once in 4 worker OS
// processes wake their waiting parent exactly once.
func TestWorkerProcessesWakeTheParentOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process test")
	}
	const tasks = 500
	c := newTestClient(t, nil)
	ctx := context.Background()
	d, err := workflow.New("fan").Then("Plan").
		StartAgents("tasks", workflow.New("agent").Then("Inc"), workflow.GroupKey("g")).
		WaitForAgentGroup("g").Then("Inc").Build(phpjson.NewObject().Set("n", phpjson.Int(0)))
	require.NoError(t, err)
	id, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)
	dir := t.TempDir()
	var kids []*child
	for i := 0; i < 4; i++ {
		kids = append(kids, startChild(t, c.cfg.DSN, filepath.Join(dir, fmt.Sprintf("w%d.out", i)),
			"QUEUETY_TEST_CHILD_WORKFLOWS=1", fmt.Sprintf("QUEUETY_TEST_CHILD_TASKS=%d", tasks), "QUEUETY_TEST_CONCURRENCY=16"))
	}
	wf := c.store.Tables()["workflows"]
	waitFor(t, 2*time.Minute, "parent completed", func() bool {
		var status string
		require.NoError(t, c.store.DB().Get(&status, "SELECT status FROM `"+wf+"` WHERE id = ?", id))
		return status == "completed"
	})
	for _, k := range kids {
		k.stop(t, 15*time.Second)
	}
	var agents, resumed int
	require.NoError(t, c.store.DB().Get(&agents, "SELECT COUNT(*) FROM `"+wf+"` WHERE id <> ? AND status = 'completed'", id))
	require.Equal(t, tasks, agents)
	require.NoError(t, c.store.DB().Get(&resumed, "SELECT COUNT(*) FROM `"+c.store.Tables()["workflow_events"]+"` WHERE workflow_id = ? AND event = 'workflow_resumed'", id))
	require.Equal(t, 1, resumed, "the parent is woken exactly once")
	var state string
	require.NoError(t, c.store.DB().Get(&state, "SELECT state FROM `"+wf+"` WHERE id = ?", id))
	st, err := workflow.ParseState([]byte(state))
	require.NoError(t, err)
	n, _ := st.Get("n")
	got, _ := n.AsInt64()
	require.EqualValues(t, 1, got, "the step after the wait ran once")
}
