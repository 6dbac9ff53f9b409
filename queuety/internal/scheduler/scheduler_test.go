package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
)

// A row the tick cannot read is warned about once per expression, not on
// every tick; the debug row comes before each tick; the loop ticks on its
// clock and the test waits on its signal.
func TestSchedulerWarnsOnceAndTicksOnItsClock(t *testing.T) {
	var logged bytes.Buffer
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	var order []string
	s := New(&Params{Interval: time.Minute, Clock: clk, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		DebugRow: func(context.Context) error { order = append(order, "debug"); return nil },
		Tick: func(ctx context.Context) (Result, error) {
			_, ok := ctx.Deadline()
			require.True(t, ok, "a tick has a timeout")
			order = append(order, "tick")
			return Result{Dispatched: 1, Unreadable: []Unreadable{{ID: 7, Handler: "h", Err: "bad"}}}, nil
		}})
	s.TestSignals.Ticked.Init()
	require.NoError(t, s.Start(context.Background()))
	r, ok := s.TestSignals.Ticked.Wait(10 * time.Second)
	require.True(t, ok)
	require.Equal(t, 1, r.Dispatched)
	clk.Advance(time.Minute)
	_, ok = s.TestSignals.Ticked.Wait(10 * time.Second)
	require.True(t, ok)
	s.Stop()
	require.Equal(t, []string{"debug", "tick", "debug", "tick"}, order)
	require.Equal(t, 1, strings.Count(logged.String(), "schedule left alone"))
	require.Equal(t, time.Minute, s.Interval())
}

// The job payload is the stored one as the plugin rewrites it.
func TestPayload(t *testing.T) {
	for stored, want := range map[string]string{`{}`: `[]`, `{"0":"a"}`: `["a"]`, `"x"`: `[]`, `nope`: `[]`, `{"a":1}`: `{"a":1}`} {
		require.Equal(t, want, string(Payload(stored)), stored)
	}
}
