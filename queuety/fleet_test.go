package queuety

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/internal/sessions"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// A worker records what it claims; UnclaimedJobs lists the pending jobs no
// live worker serving their queue claims, marks the queues where a PHP
// worker ran a job lately, and counts a registration that did not say
// what it claims (an external HTTP worker) as claiming everything.
func TestUnclaimedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, func(cfg *Config) { cfg.Queues = []string{"go"} })
	release := make(chan struct{})
	reg := NewRegistry()
	reg.HandleFunc("go_only", func(context.Context, *Job) error { <-release; return nil })
	dispatch := func(handler, queue string) {
		_, err := c.Dispatch(ctx, handler, map[string]any{}, OnQueue(queue))
		require.NoError(t, err)
	}
	dispatch("go_only", "default")
	dispatch("php_thing", "default")
	dispatch("php_thing", "go")
	dispatch("php_thing", "ext")
	_, _, err := c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("wf").Then("PhpStep").OnQueue("go"), wfObj(t)))
	require.NoError(t, err)
	// A job a PHP worker ran on default: reserved_at set, reserved_by not.
	_, err = c.store.DB().Exec("INSERT INTO `" + c.store.Tables()["jobs"] + "` (queue, handler, payload, status, attempts, reserved_at, completed_at) VALUES ('default', 'php_thing', '{}', 'completed', 1, NOW(), NOW())")
	require.NoError(t, err)
	_, err = c.sessions.Register(ctx, sessions.Registration{WorkerID: "http-ext", Queues: []string{"ext"}, Runtime: "python"})
	require.NoError(t, err)

	w := startWorker(t, c, reg)
	t.Cleanup(func() { close(release) }) // before the worker's stop (cleanups run last first)
	require.Equal(t, WorkerClaims{Handlers: []string{"go_only"}, Steps: "none", StepHandlers: []string{}}, w.scope.claims())
	dispatch("go_only", "go") // claimed by w, so not listed
	waitFor(t, 5*time.Second, "the go job claimed", func() bool { return w.Stats().Claimed == 1 })

	un, err := c.UnclaimedJobs(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []Unclaimed{
		{Queue: "default", Handler: "go_only", Kind: "job", Jobs: 1, PHPSeen: true},
		{Queue: "default", Handler: "php_thing", Kind: "job", Jobs: 1, PHPSeen: true},
		{Queue: "go", Handler: "php_thing", Kind: "job", Jobs: 1},
		{Queue: "go", Handler: "PhpStep", Kind: "step", Jobs: 1},
	}, un)

	seen, err := c.store.PHPSeenQueues(ctx, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, []string{"default"}, seen, "the Go worker's running job has reserved_by")
}

func TestWorkerClaimsRuns(t *testing.T) {
	t.Parallel()
	listed := WorkerClaims{Handlers: []string{"a"}, Steps: "listed", StepHandlers: []string{"S"}}
	require.True(t, listed.runs("a", false, false))
	require.False(t, listed.runs("b", false, false))
	require.True(t, listed.runs("S", true, false))
	require.True(t, listed.runs("__queuety_for_each", true, false), "the engine runs every placeholder")
	require.False(t, listed.runs("T", true, false))
	require.False(t, listed.runs("a", false, true), "batch jobs are not claimed")
	all := WorkerClaims{AllHandlers: true, Steps: "all", Batches: true}
	require.True(t, all.runs("x", false, false))
	require.True(t, all.runs("T", true, false))
	require.True(t, all.runs("x", false, true))
	none := WorkerClaims{AllHandlers: true, Steps: "none"}
	require.False(t, none.runs("__queuety_for_each", true, false))
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker serving default with Go handlers' jobs pending there warns at
// start when the tables show the plugin at work (the plugin's WP-Cron
// worker claims any handler on default): a pending job only another
// runtime runs, or a job a PHP worker ran on any queue. Tables with
// neither (dev's demo) get no warning about PHP workers that do not exist.
func TestWorkerWarnsAboutGoJobsOnDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := NewRegistry()
	reg.HandleFunc("send_email", func(context.Context, *Job) error { return nil })
	reg.RegisterStep("GoStep", func(context.Context, *workflow.State) (*phpjson.Object, error) { return nil, nil })
	// startReport starts and stops a worker on default over a fresh
	// database seeded by seed, returning its log.
	startReport := func(seed func(c *Client)) string {
		var logs logBuffer
		c := newTestClient(t, func(cfg *Config) {
			cfg.Queues = []string{"default"}
			cfg.Workflows = true
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.PollInterval = time.Hour // nothing is claimed before the report
		})
		_, err := c.Dispatch(ctx, "send_email", map[string]any{})
		require.NoError(t, err)
		_, _, err = c.DispatchWorkflow(ctx, mustBuild(t, workflow.New("wf").Then("GoStep"), wfObj(t)))
		require.NoError(t, err)
		seed(c)
		w, err := c.NewWorker(reg)
		require.NoError(t, err)
		// The report runs before the first claim; stop right after start.
		require.NoError(t, w.Start(ctx))
		require.NoError(t, w.Stop(ctx))
		return logs.String()
	}

	quietDefault := startReport(func(*Client) {})
	require.Contains(t, quietDefault, "worker started", "Start ran, and the report with it")
	require.NotContains(t, quietDefault, "PHP workers claim from", "no sign of a PHP worker in the tables")

	phpOnly := startReport(func(c *Client) {
		_, err := c.Dispatch(ctx, `App\Jobs\SendInvoice`, map[string]any{})
		require.NoError(t, err)
	})
	require.Contains(t, phpOnly, `msg="jobs of Go handlers are pending on queues PHP workers claim from`)
	require.Regexp(t, `queues=\[default\] handlers="?\[(send_email GoStep|GoStep send_email)\]`, phpOnly)
	require.Contains(t, phpOnly, "jobs_left_to_others=1")

	phpRan := startReport(func(c *Client) {
		// A job a PHP worker ran on another queue: reserved_at set,
		// reserved_by not. The plugin is installed, so its WP-Cron worker
		// serves default.
		_, err := c.store.DB().Exec("INSERT INTO `" + c.store.Tables()["jobs"] + "` (queue, handler, payload, status, attempts, reserved_at, completed_at) VALUES ('emails', 'php_thing', '{}', 'completed', 1, NOW(), NOW())")
		require.NoError(t, err)
	})
	require.Contains(t, phpRan, `msg="jobs of Go handlers are pending on queues PHP workers claim from`)
	require.Contains(t, phpRan, "php_seen=[emails]")

	// On a queue of its own, no warning.
	var quiet logBuffer
	c2 := newTestClient(t, func(cfg *Config) {
		cfg.Queues = []string{"go-mail"}
		cfg.Logger = slog.New(slog.NewTextHandler(&quiet, nil))
	})
	_, err := c2.Dispatch(ctx, "send_email", map[string]any{}, OnQueue("go-mail"))
	require.NoError(t, err)
	w2 := startWorker(t, c2, reg)
	waitFor(t, 5*time.Second, "the job ran", func() bool { return countStatus(t, c2, store.StatusCompleted) == 1 })
	require.NoError(t, w2.Stop(ctx))
	require.NotContains(t, quiet.String(), "PHP workers claim from")
}
