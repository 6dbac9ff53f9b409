package queuety

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// countingSteps registers steps C0…C<n-1>, each counting its runs per
// workflow (the state's "i").
type countingSteps struct {
	mu   sync.Mutex
	runs map[string]int
}

func newCountingSteps(reg *Registry, n int) *countingSteps {
	cs := &countingSteps{runs: map[string]int{}}
	for step := range n {
		reg.RegisterStep(fmt.Sprintf("C%d", step), func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
			i, _ := s.Get("i")
			cs.mu.Lock()
			cs.runs[fmt.Sprintf("%d/%d", intValue(i), step)]++
			cs.mu.Unlock()
			return phpjson.NewObject().Set(fmt.Sprintf("c%d", step), phpjson.Bool(true)), nil
		})
	}
	return cs
}

func (cs *countingSteps) count(i, step int) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.runs[fmt.Sprintf("%d/%d", i, step)]
}

func countingWorkflow(steps int) *workflow.Builder {
	b := workflow.New("chain")
	for step := range steps {
		b.Then(fmt.Sprintf("C%d", step))
	}
	return b
}

// Three workers sharing the tables run 200 four-step workflows, most steps
// chained: every step runs exactly once, every job ends completed on its
// first attempt, and the rows are the ones claimed steps leave.
func TestChainedStepsRunEachStepOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.Concurrency = 16 })
	reg := NewRegistry()
	cs := newCountingSteps(reg, 4)
	const n = 200
	for i := range n {
		_, _, err := c.DispatchWorkflow(ctx, mustBuild(t, countingWorkflow(4), wfObj(t, "i", i)))
		require.NoError(t, err)
	}
	var workers []*Worker
	for range 3 {
		workers = append(workers, startWorker(t, c, reg))
	}
	waitFor(t, 60*time.Second, "all completed", func() bool {
		done, err := c.store.CountWorkflows(ctx, "completed")
		require.NoError(t, err)
		return done == n
	})
	var claimed, chained, completed int64
	for _, w := range workers {
		require.NoError(t, w.Stop(ctx))
		st := w.Stats()
		claimed, chained, completed = claimed+st.Claimed, chained+st.Chained, completed+st.Completed
	}
	for i := range n {
		for step := range 4 {
			require.Equal(t, 1, cs.count(i, step), "workflow %d step %d", i, step)
		}
	}
	require.EqualValues(t, 4*n, completed)
	require.EqualValues(t, 4*n, claimed+chained, "every step was claimed or chained, once")
	require.Positive(t, chained)
	var bad int
	require.NoError(t, c.store.DB().Get(&bad, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+
		"` WHERE status <> 'completed' OR attempts <> 1 OR reserved_at IS NULL OR completed_at IS NULL OR reserved_by IS NULL"))
	require.Zero(t, bad, "every job completed on its first attempt, with the claim's columns")
	require.Equal(t, 4*n, countStatus(t, c, "completed"))
}

// A slot chains at most WorkflowChainSteps steps after a claimed one, and
// never a step the claim would treat differently: a delay, or a class with
// no Go handler here (left pending for the PHP workers).
func TestChainStopsAtItsLimitAndAtStepsItMayNotRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A long pause cache: a claim round and the chain check a few ms later
	// must not fall on either side of its expiry.
	c := newTestClient(t, func(cfg *Config) {
		cfg.Workflows, cfg.Concurrency, cfg.WorkflowChainSteps, cfg.PauseCacheTTL = true, 1, 2, time.Minute
	})
	reg := NewRegistry()
	newCountingSteps(reg, 5)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, countingWorkflow(5), wfObj(t, "i", 1)))
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w), "C0 claimed, C1 and C2 chained")
	require.EqualValues(t, 2, w.Stats().Chained)
	require.Equal(t, 3, workflowRow(t, c, id).CurrentStep)
	require.Equal(t, 1, countStatus(t, c, "pending"), "C3 waits for the claim")
	require.Equal(t, 1, stepOnce(t, w), "C3 claimed, C4 chained")
	require.EqualValues(t, 3, w.Stats().Chained)
	require.Equal(t, "completed", workflowRow(t, c, id).Status)

	b := countingWorkflow(1).Delay(time.Second).Then("C1").Then("SomePhpStep")
	id, _, err = c.DispatchWorkflow(ctx, mustBuild(t, b, wfObj(t, "i", 2)))
	require.NoError(t, err)
	require.Equal(t, 1, stepOnce(t, w))
	require.EqualValues(t, 3, w.Stats().Chained, "a delay is not chained")
	require.Equal(t, 1, workflowRow(t, c, id).CurrentStep)
	waitFor(t, 5*time.Second, "the delay ran, then C1", func() bool {
		stepOnce(t, w)
		return workflowRow(t, c, id).CurrentStep == 3
	})
	require.EqualValues(t, 4, w.Stats().Chained, "C1 chained after the delay placeholder")
	var handler, status string
	require.NoError(t, c.store.DB().QueryRow("SELECT handler, status FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ? AND step_index = 3", id).Scan(&handler, &status))
	require.Equal(t, []string{"SomePhpStep", "pending"}, []string{handler, status}, "a PHP step stays for the PHP workers")
}

// The chain asks the worker what the claim would: a queue it serves, not
// paused, while it is not stopping.
func TestChainAcceptsWhatTheWorkerWouldClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Workflows = true
		cfg.Queues = []string{"default", "reports"}
		cfg.PauseCacheTTL = 100 * time.Millisecond
	})
	w, err := c.NewWorker(NewRegistry())
	require.NoError(t, err)
	rt := engineHost{w}
	require.False(t, rt.Chains("default", "C0"), "not started")
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Stop(ctx) })
	// The idle claim rounds read the paused queues; Chains never does.
	waitFor(t, 2*time.Second, "a fresh read of the paused queues", func() bool { return rt.Chains("default", "C0") })
	require.True(t, rt.Chains("reports", "C0"))
	require.False(t, rt.Chains("emails", "C0"), "a queue the worker does not serve")
	require.NoError(t, c.Pause(ctx, "reports"))
	waitFor(t, 2*time.Second, "the pause seen in a fresh read", func() bool {
		return rt.Chains("default", "C0") && !rt.Chains("reports", "C0")
	})
	w.claim.paused.snap.Store(&pausedSnapshot{set: map[string]bool{}, at: time.Now().Add(-time.Second)})
	require.False(t, rt.Chains("default", "C0"), "a read older than the pause cache TTL is not trusted")
	require.NoError(t, w.Stop(ctx))
	require.False(t, rt.Chains("default", "C0"), "a stopping worker")

	off := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.WorkflowChainSteps = -1 })
	w2, err := off.NewWorker(NewRegistry())
	require.NoError(t, err)
	require.LessOrEqual(t, w2.engineConfig().ChainSteps, 0, "chaining off: NewEngine builds no chain runtime")
}

// A worker told to stop while a step runs lets the step finish but does
// not chain the next one: it is left pending, unclaimed, for the next
// worker.
func TestStoppingWorkerDoesNotChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true; cfg.Concurrency = 1 })
	reg := NewRegistry()
	cs := newCountingSteps(reg, 2)
	started, release := make(chan struct{}), make(chan struct{})
	reg.RegisterStep("Slow", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		close(started)
		<-release
		return phpjson.NewObject(), nil
	})
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("stop").Then("Slow").Then("C1"), wfObj(t, "i", 7)))
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(ctx) }()
	waitFor(t, 5*time.Second, "stop began", func() bool { return w.claim.stopped() })
	close(release)
	require.NoError(t, <-stopped)
	require.Zero(t, w.Stats().Chained)
	require.Zero(t, cs.count(7, 1))
	var status string
	var attempts int
	require.NoError(t, c.store.DB().QueryRow("SELECT status, attempts FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ? AND step_index = 1", id).Scan(&status, &attempts))
	require.Equal(t, "pending", status)
	require.Zero(t, attempts)

	startWorker(t, c, reg)
	waitFor(t, 5*time.Second, "completed by the next worker", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, 1, cs.count(7, 1))
}

// A chained step reads the state as stored, like a claimed one: PHP's
// JSON turns an object keyed 0…n-1 into a list and 2.0 into 2.
func TestChainedStepSeesTheStoredState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, chain := range []int{-1, 8} {
		c := newTestClient(t, func(cfg *Config) {
			cfg.Workflows, cfg.Concurrency, cfg.WorkflowChainSteps, cfg.PauseCacheTTL = true, 1, chain, time.Minute
		})
		reg := NewRegistry()
		reg.RegisterStep("Write", func(context.Context, *workflow.State) (*phpjson.Object, error) {
			m := phpjson.NewObject().Set("0", phpjson.String("a")).Set("1", phpjson.String("b"))
			return phpjson.NewObject().Set("m", phpjson.ObjectValue(m)).Set("f", phpjson.Float(2)), nil
		})
		var seen string
		reg.RegisterStep("Read", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
			m, _ := s.Get("m")
			_, isObject := m.AsObject()
			f, _ := s.Get("f")
			_, isInt := f.AsInt64()
			seen = fmt.Sprintf("object=%v int=%v", isObject, isInt)
			return phpjson.NewObject(), nil
		})
		id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("rt").Then("Write").Then("Read"), wfObj(t)))
		require.NoError(t, err)
		w, err := c.NewWorker(reg)
		require.NoError(t, err)
		for stepOnce(t, w) > 0 {
		}
		require.Equal(t, "completed", workflowRow(t, c, id).Status)
		require.Equal(t, "object=false int=true", seen, "chain steps %d", chain)
		require.Equal(t, chain > 0, w.Stats().Chained == 1)
	}
}

// A chained step whose worker is killed (SIGKILL) mid-step is an ordinary
// processing row held by the dead worker: the stale sweep of the next
// worker rescues it, and the step completes exactly once.
func TestKilledWorkerChainedStepCompletesAfterRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test")
	}
	ctx := context.Background()
	c := newTestClient(t, nil)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("nap").Then("Inc").Then("Nap").Then("Inc"),
		wfObj(t, "i", 42, "ms", 1500, "n", 0)))
	require.NoError(t, err)
	dir := t.TempDir()
	env := []string{"QUEUETY_TEST_CHILD_WORKFLOWS=1", "QUEUETY_TEST_STALE_MS=2000", "QUEUETY_TEST_RESCUE=@every 1s"}
	a := startChild(t, c.cfg.DSN, filepath.Join(dir, "a.out"), append(env, "QUEUETY_TEST_WORKER_ID=chain-a")...)
	waitFor(t, 20*time.Second, "the chained step started", func() bool {
		s, _ := invocations(t, filepath.Join(dir, "a.out"))
		return s[42] == 1
	})
	var status, owner string
	var attempts int
	q := "SELECT status, reserved_by, attempts FROM `" + c.store.Tables()["jobs"] + "` WHERE workflow_id = ? AND step_index = 1"
	require.NoError(t, c.store.DB().QueryRow(q, id).Scan(&status, &owner, &attempts))
	require.Equal(t, []any{"processing", "chain-a", 1}, []any{status, owner, attempts})
	require.NoError(t, a.cmd.Process.Kill())
	<-a.done

	b := startChild(t, c.cfg.DSN, filepath.Join(dir, "b.out"), append(env, "QUEUETY_TEST_WORKER_ID=chain-b")...)
	waitFor(t, 60*time.Second, "the workflow completed on the replacement", func() bool {
		return workflowRow(t, c, id).Status == "completed"
	})
	b.stop(t, 15*time.Second)
	starts, dones := invocations(t, filepath.Join(dir, "a.out"), filepath.Join(dir, "b.out"))
	require.Equal(t, 2, starts[42], "at-least-once: the killed step ran again")
	require.Equal(t, 1, dones[42], "one completion")
	require.NoError(t, c.store.DB().QueryRow(q, id).Scan(&status, &owner, &attempts))
	require.Equal(t, []any{"completed", "chain-b", 2}, []any{status, owner, attempts})
	require.Equal(t, `{"i":42,"ms":1500,"n":2}`, publicState(t, c, id))
}

// A step whose state read times out is handed back (attempt restored),
// not left processing for the stale sweep.
func TestStepWhoseStateReadTimesOutIsHandedBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	cs := newCountingSteps(reg, 1)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, countingWorkflow(1), wfObj(t, "i", 5)))
	require.NoError(t, err)
	w, err := c.NewWorker(reg)
	require.NoError(t, err)
	ecfg := w.engineConfig()
	ecfg.ReadTimeout = time.Nanosecond
	w.engine = engine.NewEngine(ecfg)
	w.run.Engine = w.engine
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Stop(ctx) })
	waitFor(t, 10*time.Second, "the step handed back", func() bool { return w.Stats().HandedBack > 0 })
	require.NoError(t, w.Stop(ctx))
	require.Zero(t, cs.count(5, 0), "the handler never ran")
	status, attempts := stepJob(t, c, id, 0)
	require.Equal(t, "pending", status)
	require.Zero(t, attempts, "the attempt was restored")
	require.Zero(t, w.Stats().Buried+w.Stats().Completed)

	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.Equal(t, 1, cs.count(5, 0))
}

// A state read that fails for good (here the worker's database user may
// read every column of the workflows table but state) is not handed back
// over and over: the job stays processing for the stale sweep, which
// spends its attempts.
func TestStepWhoseStateCannotBeReadIsLeftToTheSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	reg := NewRegistry()
	cs := newCountingSteps(reg, 1)
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, countingWorkflow(1), wfObj(t, "i", 6)))
	require.NoError(t, err)

	cfg, err := mysql.ParseDSN(c.cfg.DSN)
	require.NoError(t, err)
	user := fmt.Sprintf("qgo_nostate_%d", time.Now().UnixNano()%1e9)
	db := c.store.DB()
	_, err = db.Exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec("DROP USER '" + user + "'@'%'") })
	for _, table := range c.store.Tables() {
		if table != c.store.Tables()["workflows"] {
			_, err = db.Exec("GRANT ALL ON `" + cfg.DBName + "`.`" + table + "` TO '" + user + "'@'%'")
			require.NoError(t, err)
			continue
		}
		var cols []string
		require.NoError(t, db.Select(&cols, "SELECT CONCAT('`', COLUMN_NAME, '`') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME <> 'state'", cfg.DBName, table))
		_, err = db.Exec("GRANT SELECT (" + strings.Join(cols, ", ") + "), UPDATE, INSERT ON `" + cfg.DBName + "`.`" + table + "` TO '" + user + "'@'%'")
		require.NoError(t, err)
	}
	cfg.User, cfg.Passwd = user, "pw"
	limited, err := Open(ctx, Config{DSN: cfg.FormatDSN(), Workflows: true, PollInterval: 10 * time.Millisecond,
		ShutdownGrace: 5 * time.Second, RescueSchedule: "off", Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = limited.Close() })
	w := startWorker(t, limited, reg)
	waitFor(t, 10*time.Second, "the step claimed", func() bool { return w.Stats().Claimed > 0 })
	time.Sleep(200 * time.Millisecond) // twenty poll intervals: a hand-back would have been claimed again
	require.NoError(t, w.Stop(ctx))
	require.EqualValues(t, 1, w.Stats().Claimed, "claimed once, not handed back and claimed again")
	require.Zero(t, w.Stats().HandedBack)
	require.Zero(t, cs.count(6, 0), "the handler never ran")
	status, attempts := stepJob(t, c, id, 0)
	require.Equal(t, []any{"processing", 1}, []any{status, attempts})
}

// stepJob reads the status and attempts of a workflow step's job.
func stepJob(t *testing.T, c *Client, workflowID int64, step int) (status string, attempts int) {
	t.Helper()
	require.NoError(t, c.store.DB().QueryRow("SELECT status, attempts FROM `"+c.store.Tables()["jobs"]+
		"` WHERE workflow_id = ? AND step_index = ?", workflowID, step).Scan(&status, &attempts))
	return status, attempts
}

// With every slot busy chaining, no claim round reads the paused queues;
// the chain refreshes that read itself, so a long workflow keeps chaining
// past the pause cache TTL.
func TestLongChainOutlivesThePauseCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Workflows, cfg.Concurrency, cfg.WorkflowChainSteps, cfg.PauseCacheTTL = true, 1, 100, 400*time.Millisecond
	})
	reg := NewRegistry()
	reg.RegisterStep("Slow", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		time.Sleep(50 * time.Millisecond)
		return phpjson.NewObject(), nil
	})
	b := workflow.New("long")
	for range 30 {
		b.Then("Slow")
	}
	id, _, err := c.DispatchWorkflow(ctx, mustBuild(t, b, wfObj(t)))
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 20*time.Second, "completed", func() bool { return workflowRow(t, c, id).Status == "completed" })
	require.NoError(t, w.Stop(ctx))
	// 1.5 s of steps against a 400 ms TTL: without the refresh, a claim
	// every eight steps or so (4–5); with it one, or two on a loaded
	// machine. (The TTL leaves the background read 200 ms: shorter ones
	// made the test fail on a machine loaded well past its cores.)
	st := w.Stats()
	require.LessOrEqual(t, st.Claimed, int64(2), "claims")
	require.EqualValues(t, 30, st.Claimed+st.Chained)
}
