package queuety

import (
	"context"

	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// TestMain doubles as a worker process for the multi-process and crash
// tests: with QUEUETY_TEST_CHILD=worker the test binary runs a worker until
// SIGTERM instead of the tests (see runChildWorker).
func TestMain(m *testing.M) {
	if os.Getenv("QUEUETY_TEST_CHILD") == "worker" {
		os.Exit(runChildWorker())
	}
	os.Exit(m.Run())
}

// runChildWorker serves the handler "record": it appends "start <id>" to
// QUEUETY_TEST_OUT, sleeps the payload's "ms", then appends "done <id>".
func runChildWorker() int {
	env := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
			return v
		}
		return def
	}
	out, err := os.OpenFile(os.Getenv("QUEUETY_TEST_OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	write := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.WriteString(s)
	}
	reg := NewRegistry()
	reg.Register("record", Typed(func(ctx context.Context, j *Job, p struct {
		MS int `json:"ms"`
	}) error {
		write(fmt.Sprintf("start %d %d\n", j.ID, j.Attempt))
		if p.MS > 0 {
			select {
			case <-time.After(time.Duration(p.MS) * time.Millisecond):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		write(fmt.Sprintf("done %d %d\n", j.ID, j.Attempt))
		return nil
	}))
	// With QUEUETY_TEST_CHILD_WORKFLOWS, the child also advances
	// workflows: step "Plan" fans out to QUEUETY_TEST_CHILD_TASKS tasks,
	// "Inc" increments n.
	workflows := os.Getenv("QUEUETY_TEST_CHILD_WORKFLOWS") != ""
	if workflows {
		tasks := env("QUEUETY_TEST_CHILD_TASKS", 10)
		reg.RegisterStep("Plan", func(context.Context, *workflow.State) (*phpjson.Object, error) {
			items := make([]phpjson.Value, tasks)
			for i := range items {
				items[i] = phpjson.Int(int64(i))
			}
			return phpjson.NewObject().Set("tasks", phpjson.List(items...)), nil
		})
		reg.RegisterStep("Inc", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
			n, _ := s.Get("n")
			i, _ := n.AsInt64()
			return phpjson.NewObject().Set("n", phpjson.Int(i+1)), nil
		})
		// "Nap" records "start|done <i> 0" around a sleep of the state's
		// "ms", i being the state's "i".
		reg.RegisterStep("Nap", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
			iv, _ := s.Get("i")
			i, _ := iv.AsInt64()
			msv, _ := s.Get("ms")
			ms, _ := msv.AsInt64()
			write(fmt.Sprintf("start %d 0\n", i))
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			write(fmt.Sprintf("done %d 0\n", i))
			return phpjson.NewObject(), nil
		})
	}
	cfg := Config{
		Workflows:         workflows,
		WaitSweepInterval: time.Second,
		DSN:               os.Getenv("QUEUETY_TEST_CHILD_DSN"),
		Concurrency:       env("QUEUETY_TEST_CONCURRENCY", 8),
		StaleTimeout:      time.Duration(env("QUEUETY_TEST_STALE_MS", 600000)) * time.Millisecond,
		ShutdownGrace:     time.Duration(env("QUEUETY_TEST_GRACE_MS", 30000)) * time.Millisecond,
		RescueSchedule:    os.Getenv("QUEUETY_TEST_RESCUE"),
		PollInterval:      20 * time.Millisecond,
		Backoff:           Backoff{List: []int{0}},
		Logger:            testLogger(),
		// Worker-session tests: queue, capabilities, id and staleness.
		Queues:       SplitQueues(os.Getenv("QUEUETY_TEST_QUEUE")),
		Capabilities: SplitQueues(os.Getenv("QUEUETY_TEST_CAPS")),
		WorkerID:     os.Getenv("QUEUETY_TEST_WORKER_ID"),
	}
	if ms := env("QUEUETY_TEST_WORKER_STALE_MS", 0); ms > 0 {
		cfg.WorkerStaleAfter = time.Duration(ms) * time.Millisecond
		cfg.RegistrationHeartbeat = cfg.WorkerStaleAfter / 4
	}
	return serveChild(cfg, reg)
}

// serveChild runs a worker of reg with cfg until SIGTERM or SIGINT (or a
// kill): the body of every child mode. It returns the exit code.
func serveChild(cfg Config, reg *Registry) int {
	c, err := Open(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	w, err := c.NewWorker(reg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
