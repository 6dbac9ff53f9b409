package queuety

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHugeErrorLogsABoundedLine (N15): a job failing with a 100 KB message
// is logged in lines of at most a few KiB, each saying it was cut and how
// long the error was, while the row keeps what the plugin keeps (the
// message cut to its 64 KiB column).
func TestHugeErrorLogsABoundedLine(t *testing.T) {
	t.Parallel()
	var logged lockedBuffer
	c := newTestClient(t, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ctx := context.Background()
	msg := strings.Repeat("é", 50_000) // 100,000 bytes, cut on a character boundary
	reg := NewRegistry()
	reg.HandleFunc("huge", func(context.Context, *Job) error { return hugeError{msg: msg} },
		WithMaxAttempts(2), WithBackoff(Backoff{List: []int{0}}))
	d, err := c.Dispatch(ctx, "huge", nil)
	require.NoError(t, err)
	w := startWorker(t, c, reg)
	waitFor(t, 15*time.Second, "the job buried", func() bool { return jobRow(t, c, d.ID).Status == "buried" })
	require.NoError(t, w.Stop(ctx))

	requireFits(t, jobRow(t, c, d.ID).ErrorMessage.String, msg)
	var retried, buried bool
	for line := range strings.Lines(logged.String()) {
		require.LessOrEqual(t, len(line), maxLoggedError+1024, "a bounded log line: %.200s", line)
		if strings.Contains(line, "job failed; retrying") || strings.Contains(line, "job buried") {
			require.Contains(t, line, "cut: 100000 bytes in all")
			retried = retried || strings.Contains(line, "job failed; retrying")
			buried = buried || strings.Contains(line, "job buried")
		}
	}
	require.True(t, retried, "the retry was logged")
	require.True(t, buried, "the burial was logged")
}
