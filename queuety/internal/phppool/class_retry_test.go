package phppool_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
	store "github.com/queuety-go/queuety/sql"
)

// A handler class's config() max_attempts and backoff decide its job's
// retries over the row's max_attempts, as the plugin's
// Worker::resolve_handler_retry_settings: a row allowing 3 attempts whose
// class allows 1 is buried after the first; a row allowing 1 whose class
// allows 2 (backoff [0]) is retried once, then buried.
func TestHandlerClassConfigDecidesTheRetry(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil)
	pool := startPool(t, phppool.Config{Workers: 1}, nil)
	ids := phpDispatch(t, c,
		map[string]any{"handler": "FailsOnceAllowedHandler", "payload": map[string]any{}, "max_attempts": 3},
		map[string]any{"handler": "FailsTwiceAllowedHandler", "payload": map[string]any{}, "max_attempts": 1})
	require.Equal(t, 3, jobRow(t, c, ids[0]).MaxAttempts, "the row's own limit")
	require.Equal(t, 1, jobRow(t, c, ids[1]).MaxAttempts, "the row's own limit")
	startWorker(t, c, pool)
	waitStatus(t, c, store.StatusBuried, ids...)

	once := jobRow(t, c, ids[0])
	require.Equal(t, 1, once.Attempts, "config() max_attempts 1 beats the row's 3")
	require.Equal(t, "fails once allowed", once.ErrorMessage.String)
	require.Equal(t, []string{"started", "buried"}, events(jobLogs(t, c, ids[0])))

	twice := jobRow(t, c, ids[1])
	require.Equal(t, 2, twice.Attempts, "config() max_attempts 2 beats the row's 1")
	require.Equal(t, []string{"started", "failed", "retried", "started", "buried"}, events(jobLogs(t, c, ids[1])))
}
