package queuety

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// gpuRender is the seed's session: queue gpu-activities, requirement
// gpu:nvidia-l4.
func gpuRender(mutate func(*sessions.Options)) sessions.Options {
	q := "gpu-activities"
	o := sessions.Options{SessionID: "gpu-render", Queue: &q, Requirements: []string{"gpu:nvidia-l4"}}
	if mutate != nil {
		mutate(&o)
	}
	return o
}

func ptr[T any](v T) *T { return &v }

// insertSessionJob dispatches a job bound to the session o on its queue.
func insertSessionJob(t *testing.T, c *Client, handler, payload string, o sessions.Options) int64 {
	t.Helper()
	snap, err := phpjson.Encode(o.Normalize().Snapshot())
	require.NoError(t, err)
	queue := DefaultQueue
	if o.Queue != nil {
		queue = *o.Queue
	}
	id, _, err := c.store.InsertJob(context.Background(), store.InsertJob{
		Queue: queue, Handler: handler, Payload: []byte(payload), MaxAttempts: 3,
		SessionID: o.SessionID, WorkerSession: snap,
	})
	require.NoError(t, err)
	return id
}

// sessionWorker starts a worker on the session's queue with capabilities.
func sessionWorker(t *testing.T, c *Client, reg *Registry, id string, caps ...string) *Worker {
	t.Helper()
	cfg := c.cfg
	cfg.WorkerID, cfg.Queues, cfg.Capabilities = id, []string{"gpu-activities"}, caps
	wc := &Client{cfg: cfg, db: c.db, store: c.store, log: c.log, server: c.server, sessions: c.sessions}
	return startWorker(t, wc, reg)
}

func getSession(t *testing.T, c *Client, id string) sessions.Snapshot {
	t.Helper()
	s, err := c.sessions.Get(context.Background(), DefaultNamespace, id)
	require.NoError(t, err)
	return s
}

// The seed's example with plain jobs: render and assemble bound to
// gpu-render run on the one capable worker of three; the others never
// claim them.
func TestSessionJobsRunOnlyOnTheCapableWorker(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	var mu sync.Mutex
	ranOn := map[int64]string{}
	reg := NewRegistry()
	reg.HandleFunc("render", func(_ context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		ranOn[j.ID] = j.attempt.WorkerID
		return nil
	})
	plain1 := sessionWorker(t, c, reg, "cpu-1")
	plain2 := sessionWorker(t, c, reg, "cpu-2", "fs:/mnt/models")
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, insertSessionJob(t, c, "render", `{"frame":1}`, gpuRender(nil)))
	}
	time.Sleep(300 * time.Millisecond) // the incapable workers poll and refuse
	require.Equal(t, 6, countStatus(t, c, store.StatusPending), "no incapable worker took a session job")
	_, err := c.sessions.Get(context.Background(), DefaultNamespace, "gpu-render")
	require.ErrorIs(t, err, sessions.ErrSessionNotFound, "a refused job creates no session row")

	gpu := sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "every session job completed", func() bool { return countStatus(t, c, store.StatusCompleted) == 6 })
	for _, id := range ids {
		require.Equal(t, "gpu-1", ranOn[id], "job %d", id)
		require.Equal(t, "gpu-1", jobRow(t, c, id).ReservedBy.String)
	}
	require.Zero(t, plain1.Stats().Claimed)
	require.Zero(t, plain2.Stats().Claimed)
	require.EqualValues(t, 6, gpu.Stats().Claimed)
	s := getSession(t, c, "gpu-render")
	require.Equal(t, "active", s.Status)
	require.Equal(t, "gpu-1", *s.LeaseOwner)
}

// max_concurrent_activities=1 with four jobs and four slots: the peak
// concurrency observed is 1, and all complete.
func TestSessionMaxConcurrentActivitiesOneIsAPeakOfOne(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 4 })
	var running, peak atomic.Int32
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(80 * time.Millisecond)
		running.Add(-1)
		return nil
	})
	for i := 0; i < 4; i++ {
		insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	}
	sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	sessionWorker(t, c, reg, "gpu-2", "gpu:nvidia-l4")
	waitFor(t, 20*time.Second, "all completed", func() bool { return countStatus(t, c, store.StatusCompleted) == 4 })
	require.EqualValues(t, 1, peak.Load())
}

// A graceful stop closes the sessions the worker holds; a later create by
// another worker is refused with session_closed.
func TestGracefulStopClosesSessions(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	w := sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "completed", func() bool { return countStatus(t, c, store.StatusCompleted) == 1 })
	require.Equal(t, "active", getSession(t, c, "gpu-render").Status)
	require.NoError(t, w.Stop(context.Background()))
	require.Equal(t, "closed", getSession(t, c, "gpu-render").Status)
	_, err := c.sessions.Worker(context.Background(), DefaultNamespace, "gpu-1")
	require.ErrorIs(t, err, sessions.ErrWorkerNotRegistered, "a stopped worker deregisters")

	ctx := context.Background()
	_, err = c.sessions.Register(ctx, sessions.Registration{WorkerID: "gpu-2", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}})
	require.NoError(t, err)
	res, err := c.sessions.Create(ctx, DefaultNamespace, "gpu-2", gpuRender(nil))
	require.NoError(t, err)
	require.False(t, res.Admitted)
	require.Equal(t, "session_closed", res.Reason)

	// A job bound to the closed session can never run: it is buried with
	// the reason, not left pending for ever.
	late := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	w2 := sessionWorker(t, c, reg, "gpu-3", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "late job buried", func() bool { return jobRow(t, c, late).Status == store.StatusBuried })
	require.Zero(t, w2.Stats().Claimed)
	require.Contains(t, jobRow(t, c, late).ErrorMessage.String, `Worker session "gpu-render" cannot be used`)
	require.Contains(t, jobRow(t, c, late).ErrorMessage.String, "session_closed")
}

// A session held by a live worker is not taken by another capable one:
// its jobs wait (pending, untouched) until the owner lets go.
func TestSessionOwnedByAnotherWorkerWaits(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	_, err := c.sessions.Register(ctx, sessions.Registration{WorkerID: "ext-1", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}})
	require.NoError(t, err)
	res, err := c.sessions.Create(ctx, DefaultNamespace, "ext-1", gpuRender(nil))
	require.NoError(t, err)
	require.True(t, res.Admitted)
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	id := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	w := sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, w.Stats().Claimed)
	row := jobRow(t, c, id)
	require.Equal(t, store.StatusPending, row.Status)
	require.Zero(t, row.Attempts, "a refused admission spends no attempt")

	res, err = c.sessions.Close(ctx, DefaultNamespace, "gpu-render", "ext-1")
	require.NoError(t, err)
	require.True(t, res.Admitted)
	waitFor(t, 10*time.Second, "closed: the job can never run, so it is buried", func() bool {
		return jobRow(t, c, id).Status == store.StatusBuried
	})
	require.Zero(t, w.Stats().Claimed)
}

// Jobs of a session another worker holds, more than a page of them, do not
// hide the jobs of another session behind them.
func TestHeldSessionDoesNotHideOthers(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	ctx := context.Background()
	_, err := c.sessions.Register(ctx, sessions.Registration{WorkerID: "ext-1", TaskQueue: "gpu-activities", Capabilities: []string{"gpu:nvidia-l4"}})
	require.NoError(t, err)
	res, err := c.sessions.Create(ctx, DefaultNamespace, "ext-1", gpuRender(nil))
	require.NoError(t, err)
	require.True(t, res.Admitted)
	for i := 0; i < 2*sessions.ClaimCandidates; i++ {
		insertSessionJob(t, c, "render", `[]`, gpuRender(nil)) // held by ext-1
	}
	other := insertSessionJob(t, c, "render", `[]`, gpuRender(func(o *sessions.Options) { o.SessionID = "gpu-other" }))
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "the other session's job ran", func() bool { return jobRow(t, c, other).Status == store.StatusCompleted })
	require.Equal(t, 2*sessions.ClaimCandidates, countStatus(t, c, store.StatusPending), "the held session's jobs wait")
}

// A job whose worker_session cannot be read is buried with the reason, and
// the worker keeps serving the others.
func TestBadWorkerSessionIsBuried(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	good := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	bad := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	_, err := c.db.Exec("UPDATE "+c.store.Tables()["jobs"]+" SET worker_session = ? WHERE id = ?", `{"session_id":"","lease_seconds":"soon"}`, bad)
	require.NoError(t, err)
	// A stored snapshot is read leniently: a bad number takes its default.
	lenient := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	_, err = c.db.Exec("UPDATE "+c.store.Tables()["jobs"]+" SET worker_session = ? WHERE id = ?",
		`{"session_id":"gpu-render","queue":"gpu-activities","requirements":["gpu:nvidia-l4"],"lease_seconds":"soon","create_if_missing":"yes"}`, lenient)
	require.NoError(t, err)
	sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "good job completed", func() bool { return jobRow(t, c, good).Status == store.StatusCompleted })
	waitFor(t, 10*time.Second, "lenient job completed", func() bool { return jobRow(t, c, lenient).Status == store.StatusCompleted })
	waitFor(t, 10*time.Second, "bad job buried", func() bool { return jobRow(t, c, bad).Status == store.StatusBuried })
	row := jobRow(t, c, bad)
	require.Contains(t, row.ErrorMessage.String, "Invalid worker_session")
	require.Contains(t, row.ErrorMessage.String, "session_id")
	require.Equal(t, []string{store.EventStarted, store.EventBuried}, logEvents(jobLogs(t, c, bad)))
}

// A bad row alone in its window is buried too (the window commits for it).
func TestLoneBadWorkerSessionIsBuried(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	bad := insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	_, err := c.db.Exec("UPDATE "+c.store.Tables()["jobs"]+" SET worker_session = ? WHERE id = ?", `not json`, bad)
	require.NoError(t, err)
	reg := NewRegistry()
	reg.HandleFunc("render", func(context.Context, *Job) error { return nil })
	sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "bad job buried", func() bool { return jobRow(t, c, bad).Status == store.StatusBuried })
	require.Contains(t, jobRow(t, c, bad).ErrorMessage.String, "Invalid worker_session: not JSON")
}

// A running job whose session renewal is refused (here: closed under it)
// has its context cancelled with ErrSessionLost and the reason.
func TestRefusedSessionRenewalStopsTheJob(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, nil)
	causes := make(chan error, 1)
	reg := NewRegistry()
	reg.HandleFunc("render", func(ctx context.Context, j *Job) error {
		for ctx.Err() == nil {
			if err := j.Heartbeat(ctx, nil); err != nil {
				causes <- err
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
		causes <- context.Cause(ctx)
		return context.Cause(ctx)
	})
	insertSessionJob(t, c, "render", `[]`, gpuRender(nil))
	sessionWorker(t, c, reg, "gpu-1", "gpu:nvidia-l4")
	waitFor(t, 10*time.Second, "session created", func() bool {
		_, err := c.sessions.Get(context.Background(), DefaultNamespace, "gpu-render")
		return err == nil
	})
	res, err := c.sessions.Close(context.Background(), DefaultNamespace, "gpu-render", "gpu-1")
	require.NoError(t, err)
	require.True(t, res.Admitted)
	select {
	case err := <-causes:
		require.ErrorIs(t, err, ErrSessionLost)
		require.Contains(t, err.Error(), "session_not_active")
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not told to stop")
	}
}

// SIGKILL of the owner mid-job: the attempt is rescued, another capable
// worker reacquires the session with the original TTL, the job completes
// exactly once, and the killed attempt's late completion is refused.
func TestKilledSessionOwnerIsReacquired(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test")
	}
	c := newTestClient(t, nil)
	dir := t.TempDir()
	snap, err := phpjson.Encode(gpuRender(func(o *sessions.Options) { o.LeaseSeconds = ptr(30) }).Normalize().Snapshot())
	require.NoError(t, err)
	id, _, err := c.store.InsertJob(context.Background(), store.InsertJob{
		Queue: "gpu-activities", Handler: "record", Payload: []byte(`{"ms":1500}`), MaxAttempts: 3,
		SessionID: "gpu-render", WorkerSession: snap,
	})
	require.NoError(t, err)
	env := []string{"QUEUETY_TEST_QUEUE=gpu-activities", "QUEUETY_TEST_CAPS=gpu:nvidia-l4",
		"QUEUETY_TEST_STALE_MS=2000", "QUEUETY_TEST_RESCUE=@every 1s", "QUEUETY_TEST_WORKER_STALE_MS=2000"}
	a := startChild(t, c.cfg.DSN, filepath.Join(dir, "a.out"), append(env, "QUEUETY_TEST_WORKER_ID=gpu-a")...)
	waitFor(t, 20*time.Second, "first owner started the job", func() bool {
		s, _ := invocations(t, filepath.Join(dir, "a.out"))
		return s[id] == 1
	})
	first := getSession(t, c, "gpu-render")
	require.Equal(t, "gpu-a", *first.LeaseOwner)
	require.NoError(t, a.cmd.Process.Kill())
	<-a.done

	b := startChild(t, c.cfg.DSN, filepath.Join(dir, "b.out"), append(env, "QUEUETY_TEST_WORKER_ID=gpu-b")...)
	waitFor(t, 60*time.Second, "the job completed on the replacement", func() bool {
		return jobRow(t, c, id).Status == store.StatusCompleted
	})
	b.stop(t, 15*time.Second)
	starts, dones := invocations(t, filepath.Join(dir, "a.out"), filepath.Join(dir, "b.out"))
	require.Equal(t, 2, starts[id], "at-least-once: the killed attempt ran again")
	require.Equal(t, 1, dones[id], "exactly one completion")
	row := jobRow(t, c, id)
	require.Equal(t, "gpu-b", row.ReservedBy.String)
	after := getSession(t, c, "gpu-render")
	require.Equal(t, "closed", after.Status, "the replacement closed it at its graceful stop")
	require.Equal(t, "gpu-b", *after.LeaseOwner)
	require.Equal(t, first.TTLExpiresAt, after.TTLExpiresAt, "reacquire keeps the original TTL")

	// The killed owner's late completion changes nothing.
	err = c.Tasks().Complete(context.Background(), "gpu-a", id, 1)
	require.True(t, errors.Is(err, ErrStaleAttempt), "got %v", err)
	require.Equal(t, "gpu-b", jobRow(t, c, id).ReservedBy.String)
}

// The seed's example as a workflow: render and assemble bound to
// gpu-render (queue gpu-activities, requirement gpu:nvidia-l4) both run on
// the one capable worker of three; the steps around them run anywhere.
func TestSeedSessionWorkflowRunsOnTheCapableWorker(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Workflows = true })
	var mu sync.Mutex
	ranOn := map[string]string{}
	// Each worker has its own registry, so a step knows where it ran.
	registry := func(worker string) *Registry {
		reg := NewRegistry()
		for _, name := range []string{"Plan", "RenderFrames", "AssembleManifest", "Publish"} {
			reg.RegisterStep(name, func(context.Context, *workflow.State) (*phpjson.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				ranOn[name] = worker
				return phpjson.NewObject().Set(name, phpjson.Bool(true)), nil
			})
		}
		return reg
	}
	b := workflow.New("render-video").Then("Plan")
	b.WorkerSession("gpu-render", workflow.WorkerSessionOptions{
		Queue: "gpu-activities", Requirements: []string{"gpu:nvidia-l4"}, LeaseSeconds: 120, TTLSeconds: 1800, MaxConcurrentActivities: 1,
	}).Then("RenderFrames").Then("AssembleManifest")
	b.Then("Publish")
	d, err := b.Build(phpjson.NewObject())
	require.NoError(t, err)

	start := func(id string, caps ...string) *Worker {
		cfg := c.cfg
		cfg.WorkerID, cfg.Queues, cfg.Capabilities = id, []string{"default", "gpu-activities"}, caps
		wc := &Client{cfg: cfg, db: c.db, store: c.store, log: c.log, server: c.server, sessions: c.sessions}
		return startWorker(t, wc, registry(id))
	}
	start("cpu-1")
	start("cpu-2", "fs:/mnt/models")
	start("gpu-1", "gpu:nvidia-l4")
	wf, _, err := c.DispatchWorkflow(context.Background(), d)
	require.NoError(t, err)
	waitFor(t, 20*time.Second, "workflow completed", func() bool {
		st, err := c.WorkflowStatus(context.Background(), wf)
		return err == nil && st.Status == "completed"
	})
	require.Equal(t, "gpu-1", ranOn["RenderFrames"])
	require.Equal(t, "gpu-1", ranOn["AssembleManifest"])
	var sessionJobs []store.JobRow
	require.NoError(t, c.db.Select(&sessionJobs, "SELECT * FROM "+c.store.Tables()["jobs"]+" WHERE workflow_id = ? AND session_id IS NOT NULL ORDER BY id", wf))
	require.Len(t, sessionJobs, 2)
	for _, j := range sessionJobs {
		require.Equal(t, "gpu-activities", j.Queue)
		require.Equal(t, "gpu-render", j.SessionID.String)
		require.Equal(t, "gpu-1", j.ReservedBy.String)
	}
	s := getSession(t, c, "gpu-render")
	require.Equal(t, "gpu-1", *s.LeaseOwner)
}

// Three capable workers, five sessions, a hundred session-bound jobs: each
// job completes exactly once, and every job of a session runs on the one
// worker that holds it.
func TestSessionJobsStayPinnedUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) { cfg.Concurrency = 8 })
	var mu sync.Mutex
	runs := map[int64]int{}
	ranOn := map[string]map[string]bool{} // session → workers
	registry := func(worker string) *Registry {
		reg := NewRegistry()
		reg.HandleFunc("render", func(_ context.Context, j *Job) error {
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			runs[j.ID]++
			sid := jobRow(t, c, j.ID).SessionID.String
			if ranOn[sid] == nil {
				ranOn[sid] = map[string]bool{}
			}
			ranOn[sid][worker] = true
			return nil
		})
		return reg
	}
	var ids []int64
	for i := 0; i < 100; i++ {
		sid := fmt.Sprintf("s%d", i%5)
		ids = append(ids, insertSessionJob(t, c, "render", `[]`, gpuRender(func(o *sessions.Options) {
			o.SessionID = sid
			o.MaxConcurrentActivities = ptr(4)
		})))
	}
	for _, w := range []string{"gpu-1", "gpu-2", "gpu-3"} {
		sessionWorker(t, c, registry(w), w, "gpu:nvidia-l4")
	}
	waitFor(t, 30*time.Second, "all completed", func() bool { return countStatus(t, c, store.StatusCompleted) == 100 })
	mu.Lock()
	defer mu.Unlock()
	// Each job completed once: one `completed` log row. A handler may run
	// again only when the server rolled its claim window back (a deadlock
	// under load: the window's rows, logs included, go back to pending),
	// which is Queuety's at-least-once, not a second claim.
	var completions []struct {
		JobID int64 `db:"job_id"`
		N     int   `db:"n"`
	}
	require.NoError(t, c.store.DB().Select(&completions, "SELECT job_id, COUNT(*) AS n FROM `"+c.store.Tables()["logs"]+
		"` WHERE event = 'completed' GROUP BY job_id"))
	require.Len(t, completions, len(ids))
	for _, cpl := range completions {
		require.Equal(t, 1, cpl.N, "job %d completed once", cpl.JobID)
	}
	for _, id := range ids {
		require.GreaterOrEqual(t, runs[id], 1, "job %d ran", id)
	}
	require.Len(t, ranOn, 5)
	for sid, workers := range ranOn {
		require.Len(t, workers, 1, "session %s ran on one worker: %v", sid, workers)
		s := getSession(t, c, sid)
		require.True(t, workers[*s.LeaseOwner], "session %s is held by the worker that ran it", sid)
	}
}
