package maintenance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)

// The rescuer sweeps at start and then at each time of its cron spec on
// the injected clock, with a timeout derived from the loop's ctx; Stop
// cancels it.
func TestRescuerTicksOnItsClock(t *testing.T) {
	clk := clock.NewFake(t0)
	var observed [2]int
	var deadlines []time.Duration
	r := NewRescuer(&RescuerParams{Schedule: "*/5 * * * *", Clock: clk,
		Recover: func(ctx context.Context) (int, int, error) {
			dl, ok := ctx.Deadline()
			require.True(t, ok)
			deadlines = append(deadlines, time.Until(dl))
			return 2, 1, nil
		},
		Observe: func(retried, buried int) { observed[0] += retried; observed[1] += buried }})
	r.TestSignals.Swept.Init()
	r.loop.Signals.Waiting.Init()
	require.NoError(t, r.Start(context.Background()))
	require.Equal(t, [2]int{2, 1}, wait(t, &r.TestSignals.Swept), "a sweep at start")
	require.Equal(t, t0.Truncate(time.Hour).Add(5*time.Minute), wait(t, &r.loop.Signals.Waiting))
	clk.Advance(5 * time.Minute)
	wait(t, &r.TestSignals.Swept)
	r.Stop()
	require.Equal(t, [2]int{4, 2}, observed)
	for _, d := range deadlines {
		require.LessOrEqual(t, d, RescueTimeout)
	}
}

// A bad spec fails Start, as robfig/cron's AddFunc did.
func TestRescuerBadSchedule(t *testing.T) {
	r := NewRescuer(&RescuerParams{Schedule: "every tuesday"})
	require.Error(t, r.Start(context.Background()))
	r.Stop()
}

// A lost connection holds the sweep off: every running job looks stale
// right after an outage.
func TestRescuerHoldsOffAfterTrouble(t *testing.T) {
	swept := false
	r := NewRescuer(&RescuerParams{Schedule: "@every 1h", HoldOff: time.Hour,
		TroubleAt: func() int64 { return time.Now().UnixNano() },
		Recover:   func(context.Context) (int, int, error) { swept = true; return 0, 0, nil }})
	r.TestSignals.Held.Init()
	r.RunOnce(context.Background())
	_, held := r.TestSignals.Held.Wait(time.Second)
	require.True(t, held)
	require.False(t, swept)
}

// The retention sweep reports ok, skipped (another process holds the
// lock) and failed, and Stop cancels a sweep under way.
func TestRetentionResults(t *testing.T) {
	var results []string
	errs := []error{ErrRetentionLocked, errors.New("boom"), nil}
	r := NewRetention(&RetentionParams{Schedule: "@daily",
		Sweep: func(context.Context) (map[store.RetentionKind]int, error) {
			err := errs[0]
			errs = errs[1:]
			return map[store.RetentionKind]int{store.RetainCompleted: 3}, err
		},
		Observe: func(result string, _ map[store.RetentionKind]int) { results = append(results, result) }})
	ctx := context.Background()
	require.Equal(t, "skipped", r.RunOnce(ctx))
	require.Equal(t, "failed", r.RunOnce(ctx))
	require.Equal(t, "ok", r.RunOnce(ctx))
	require.Equal(t, []string{"skipped", "failed", "ok"}, results)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.Equal(t, "failed", r.RunOnce(cancelled), "a stopped service does not sweep")
	require.Len(t, results, 3)
}

// The retention loop sweeps at start and then on its cron spec, on the
// clock; Stop cancels the sweep's ctx.
func TestRetentionTicksOnItsClock(t *testing.T) {
	clk := clock.NewFake(t0)
	stopped := make(chan struct{})
	r := NewRetention(&RetentionParams{Schedule: "@hourly", Clock: clk,
		Sweep: func(ctx context.Context) (map[store.RetentionKind]int, error) {
			if clk.Now().After(t0) { // the second sweep waits for Stop
				<-ctx.Done()
				close(stopped)
				return nil, ctx.Err()
			}
			return nil, nil
		}})
	r.TestSignals.Swept.Init()
	r.loop.Signals.Waiting.Init()
	require.NoError(t, r.Start(context.Background()))
	require.Equal(t, "ok", wait(t, &r.TestSignals.Swept))
	require.Equal(t, t0.Truncate(time.Hour).Add(time.Hour), wait(t, &r.loop.Signals.Waiting))
	clk.Advance(time.Hour)
	time.AfterFunc(10*time.Millisecond, r.Stop)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not cancel the sweep")
	}
	r.Stop()
}

// The deadline checker runs at start and every interval of its clock.
func TestDeadlineCheckerTicksOnItsClock(t *testing.T) {
	clk := clock.NewFake(t0)
	d := NewDeadlineChecker(&DeadlineParams{Interval: time.Minute, Clock: clk,
		Check: func(ctx context.Context) (int, error) {
			_, ok := ctx.Deadline()
			require.True(t, ok)
			return 1, nil
		}})
	d.TestSignals.Checked.Init()
	require.NoError(t, d.Start(context.Background()))
	require.Equal(t, 1, wait(t, &d.TestSignals.Checked))
	clk.Advance(time.Minute)
	require.Equal(t, 1, wait(t, &d.TestSignals.Checked))
	d.Stop()
}

func wait[T any](t *testing.T, s interface{ Wait(time.Duration) (T, bool) }) T {
	t.Helper()
	v, ok := s.Wait(10 * time.Second)
	require.True(t, ok, "no signal")
	return v
}

// The signal poller reads from its watermark, and from the first signal
// every DefaultSignalFullScanEvery polls.
func TestSignalPollerWatermark(t *testing.T) {
	var afters []int64
	mark := int64(0)
	p := NewSignalPoller(&SignalPollerParams{Interval: time.Hour,
		Poll: func(_ context.Context, after int64) (int64, int, error) {
			afters = append(afters, after)
			mark += 10
			return mark, 1, nil
		}})
	for range DefaultSignalFullScanEvery + 2 {
		n, err := p.RunOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	require.Equal(t, int64(0), afters[0], "the first poll reads from the start")
	require.Equal(t, int64(10), afters[1])
	require.Equal(t, int64(0), afters[DefaultSignalFullScanEvery], "a full poll every DefaultSignalFullScanEvery")
	require.Equal(t, int64(DefaultSignalFullScanEvery+1)*10, afters[DefaultSignalFullScanEvery+1])
}

// The wait sweeper sweeps at start and every interval of its clock.
func TestWaitSweeperTicksOnItsClock(t *testing.T) {
	clk := clock.NewFake(t0)
	swept := make(chan struct{}, 4)
	s := NewWaitSweeper(&WaitSweeperParams{Interval: time.Second, Clock: clk,
		Sweep: func(context.Context) (workflow.SweepResult, error) {
			swept <- struct{}{}
			return workflow.SweepResult{}, nil
		}})
	require.NoError(t, s.Start(context.Background()))
	<-swept
	clk.Advance(time.Second)
	<-swept
	s.Stop()
}
