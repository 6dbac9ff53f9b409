package queuety

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The Go API door of N1/N14/N18: queue, handler, workflow and signal
// names the plugin's columns cannot hold, or holding control
// characters, are refused with an error that Is store.ErrInvalidName
// and quotes a prefix only; nothing is written. A 300-character signal
// was the server's "Data too long". Path-like names are data.
func TestClientRefusesBadNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestClient(t, nil)
	d, err := workflow.New("editorial").Then("Draft").WaitForApproval().Build(phpjson.NewObject())
	require.NoError(t, err)
	wf, _, err := c.DispatchWorkflow(ctx, d)
	require.NoError(t, err)

	long := strings.Repeat("x", 300)
	for name, call := range map[string]func() error{
		"pause long":       func() error { return c.Pause(ctx, long) },
		"pause NUL":        func() error { return c.Pause(ctx, "nul\x00q") },
		"resume ESC":       func() error { return c.Resume(ctx, "esc\x1b[2J") },
		"dispatch queue":   func() error { _, err := c.Dispatch(ctx, "h", nil, OnQueue("tab\tq")); return err },
		"dispatch handler": func() error { _, err := c.Dispatch(ctx, long, nil); return err },
		"handler newline":  func() error { _, err := c.Dispatch(ctx, "h\nforged log line", nil); return err },
		"signal long":      func() error { return c.Signal(ctx, wf, long, nil) },
		"approve long":     func() error { return c.Approve(ctx, wf, nil, long) },
		"schedule handler": func() error { return CheckSchedule(NewSchedule{Handler: "h\x1b[2J", Every: "1 minute"}) },
		"signal NUL":       func() error { return c.Signal(ctx, wf, "a\x00", nil) },
		"workflow name ESC": func() error {
			d2, _ := workflow.New("x\x1b[2J").Then("Draft").Build(phpjson.NewObject())
			_, _, err := c.DispatchWorkflow(ctx, d2)
			return err
		},
	} {
		err := call()
		require.ErrorIs(t, err, store.ErrInvalidName, name)
		require.NotContains(t, err.Error(), strings.Repeat("x", 60), "%s: a prefix only", name)
	}
	signals, err := c.store.SignalsOf(ctx, wf)
	require.NoError(t, err)
	require.Empty(t, signals)
	require.Zero(t, countStatus(t, c, "pending")-1, "only the workflow's first step job")
	paused, err := c.store.PausedQueues(ctx)
	require.NoError(t, err)
	require.Empty(t, paused)

	for _, q := range []string{"../workflows/7/approve?", "emails/high", "a%2Fb", strings.Repeat("é", 64)} {
		require.NoError(t, c.Pause(ctx, q), q)
	}
	require.NoError(t, c.Signal(ctx, wf, strings.Repeat("s", 255), nil))
}
