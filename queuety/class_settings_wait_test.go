package queuety

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// unreadablePHP is a PHP pool whose class settings cannot be read until
// readable is set (a pool that cannot answer): ClassMetadata fails.
type unreadablePHP struct {
	fakePHP
	mu       sync.Mutex
	readable atomic.Bool
	asked    atomic.Int32
}

func (f *unreadablePHP) ClassMetadata(_ context.Context, class string) (workflow.HandlerMetadata, error) {
	f.asked.Add(1)
	if !f.readable.Load() {
		return workflow.HandlerMetadata{}, fmt.Errorf("no PHP process answered: %w", context.DeadlineExceeded)
	}
	return f.meta[class], nil
}

func (f *unreadablePHP) HandleStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fakePHP.HandleStep(ctx, job, state)
}

func (f *unreadablePHP) ran(class string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[class]
}

// TestStepWaitsForItsClassSettings: a step job is never written without
// its PHP class's settings. While the next step's class cannot be read,
// the step before it does not run: it is handed back untouched (attempt
// unspent) and the log says why (the classes of every step are read
// before any runs); once the settings can be read, it runs
// once and the next job carries them.
func TestStepWaitsForItsClassSettings(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.Queues = []string{"default", "llm"}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	php := &unreadablePHP{fakePHP: fakePHP{calls: map[string]int{}, meta: map[string]workflow.HandlerMetadata{
		"ConfiguredStep": {Queue: "llm", MaxAttempts: 7, ConcurrencyGroup: "llm", ConcurrencyLimit: 1, CostUnits: 5},
	}}}
	reg := NewRegistry()
	reg.SetFallback(php)
	id := dispatchWF(t, c, workflow.New("wait").Then("IncStep").Then("ConfiguredStep"), wfObj(t, "n", 0))
	startWorker(t, c, reg)

	waitFor(t, 10*time.Second, "the step handed back twice", func() bool { return php.asked.Load() >= 3 })
	require.Zero(t, php.ran("IncStep"), "the step before does not run without the next class's settings")
	require.Contains(t, logs.String(), `msg="workflow step not started; handing it back"`)
	require.Contains(t, logs.String(), `could not read a PHP class's settings (IncStep): no PHP process answered: context deadline exceeded`)

	php.readable.Store(true)
	waitFor(t, 10*time.Second, "the next step's job", func() bool {
		var n int
		require.NoError(t, c.store.DB().Get(&n, "SELECT COUNT(*) FROM `"+c.store.Tables()["jobs"]+"` WHERE workflow_id = ? AND step_index = 1", id))
		return n == 1
	})
	require.Equal(t, 1, php.ran("IncStep"), "run once")
	var row struct {
		Queue       string `db:"queue"`
		MaxAttempts int    `db:"max_attempts"`
		Cost        int    `db:"cost_units"`
		Attempts    int    `db:"first_attempts"`
	}
	require.NoError(t, c.store.DB().Get(&row, "SELECT j.queue, j.max_attempts, j.cost_units, f.attempts AS first_attempts FROM `"+
		c.store.Tables()["jobs"]+"` j JOIN `"+c.store.Tables()["jobs"]+"` f ON f.workflow_id = j.workflow_id AND f.step_index = 0 WHERE j.workflow_id = ? AND j.step_index = 1", id))
	require.Equal(t, "llm", row.Queue)
	require.Equal(t, 7, row.MaxAttempts)
	require.Equal(t, 5, row.Cost)
	require.Equal(t, 1, row.Attempts, "the handed-back tries spent no attempt")
}

// refusingPHP answers every class-settings read with the class's own
// failure (PHP cannot load it: its autoloader throws).
type refusingPHP struct{ unreadablePHP }

func (f *refusingPHP) ClassMetadata(context.Context, string) (workflow.HandlerMetadata, error) {
	f.asked.Add(1)
	return workflow.HandlerMetadata{}, runtimeErr{"the autoloader is broken"}
}

// TestStepFailsWhenPHPRefusesItsClassSettings: a class whose settings PHP
// refuses is not waited for (asking again would only throw again): the
// attempt fails without running the handler, is retried as any failure,
// and the workflow fails when the attempts are spent, saying why.
func TestStepFailsWhenPHPRefusesItsClassSettings(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.Workflows = true
		cfg.Backoff = Backoff{List: []int{0}}
	})
	php := &refusingPHP{unreadablePHP{fakePHP: fakePHP{calls: map[string]int{}}}}
	reg := NewRegistry()
	reg.SetFallback(php)
	id := dispatchWF(t, c, workflow.New("refused").MaxAttempts(2).Then("IncStep").Then("ConfiguredStep"), wfObj(t, "n", 0))
	startWorker(t, c, reg)
	waitFor(t, 10*time.Second, "the workflow failed", func() bool {
		st, err := c.WorkflowStatus(context.Background(), id)
		require.NoError(t, err)
		return st.Status == workflow.StatusFailed
	})
	require.Zero(t, php.ran("IncStep"))
	require.EqualValues(t, 2, php.asked.Load(), "one read per attempt")
	var msg string
	require.NoError(t, c.store.DB().Get(&msg, "SELECT error_message FROM `"+c.store.Tables()["workflows"]+"` WHERE id = ?", id))
	require.Contains(t, msg, "could not read a PHP class's settings (IncStep): the autoloader is broken")
}
