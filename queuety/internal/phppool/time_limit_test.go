package phppool_test

import (
	"testing"
	"time"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// A job's time limit runs from when a PHP process takes it, not while it
// waits for a free one: with one process and two slots, the second of two
// 1.2 s jobs with a 2 s limit waits about 1.2 s and still completes (it
// timed out when the wait counted).
func TestTimeLimitStartsWhenAProcessTakesTheJob(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	job := map[string]any{"handler": "sleeps", "payload": map[string]any{
		"ms": 1200, "__queuety_runtime": map[string]any{"max_attempts": 1, "timeout_seconds": 2},
	}}
	ids := phpDispatch(t, c, job, job)
	startWorker(t, c, pool)
	waitFor(t, 20*time.Second, "both jobs finished", func() bool {
		for _, id := range ids {
			if s := jobRow(t, c, id).Status; s != store.StatusCompleted && s != store.StatusBuried {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		r := jobRow(t, c, id)
		msg := ""
		if r.ErrorMessage.Valid {
			msg = r.ErrorMessage.String
		}
		if r.Status != store.StatusCompleted {
			t.Fatalf("job %d %s: %s", id, r.Status, msg)
		}
	}
}
