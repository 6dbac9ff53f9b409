package startstop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
)

// A loop runs a round at start and then one per interval of its clock: a
// fake clock drives it with no sleep, and Stop waits for it.
func TestTickerServiceRunsOnItsClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	rounds := make(chan time.Time)
	s := &Loop{Name: "test", Every: time.Minute, Clock: clk,
		Round: func(_ context.Context, now time.Time) { rounds <- now }}
	require.NoError(t, s.Start(context.Background()))
	require.NoError(t, s.Start(context.Background()), "a second Start does nothing")
	require.Equal(t, t0, next(t, rounds), "a round at start")

	clk.Advance(30 * time.Second) // not due: no round
	clk.Advance(30 * time.Second)
	require.Equal(t, t0.Add(time.Minute), next(t, rounds), "the first round after start is one interval on")

	clk.Advance(5 * time.Minute) // a reader that falls behind gets one tick, as time.Ticker
	require.Equal(t, t0.Add(6*time.Minute), next(t, rounds))
	clk.Advance(time.Minute)
	require.Equal(t, t0.Add(7*time.Minute), next(t, rounds))

	s.Stop()
	s.Stop()
	clk.Advance(time.Hour)
	select {
	case now := <-rounds:
		t.Fatalf("round at %s after Stop", now)
	default:
	}
}

// The heartbeater skips the round at start: nothing is due yet.
func TestTickerServiceSkipFirst(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	rounds := make(chan time.Time)
	s := &Loop{Name: "test", Every: time.Second, Clock: clk, SkipFirst: true,
		Round: func(_ context.Context, now time.Time) { rounds <- now }}
	require.NoError(t, s.Start(context.Background()))
	clk.Advance(time.Second)
	require.Equal(t, t0.Add(time.Second), next(t, rounds))
	s.Stop()
}

// A cron loop ticks on its clock too: the schedule only computes the next
// time, the fake clock reaches it, and the test waits on the loop's
// signals instead of sleeping.
func TestLoopCronRunsOnItsClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewFake(t0)
	sched, err := ParseCron("*/5 * * * *")
	require.NoError(t, err)
	var ctxs []context.Context
	l := &Loop{Name: "test", Cron: sched, Clock: clk,
		Round: func(ctx context.Context, _ time.Time) { ctxs = append(ctxs, ctx) }}
	l.Signals.RoundDone.Init()
	l.Signals.Waiting.Init()
	require.NoError(t, l.Start(context.Background()))
	require.Equal(t, t0, wait(t, &l.Signals.RoundDone), "a round at start")
	require.Equal(t, time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC), wait(t, &l.Signals.Waiting))

	clk.Advance(4 * time.Minute) // 12:04:30: not due
	clk.Advance(30 * time.Second)
	require.Equal(t, time.Date(2026, 12, 1, 12, 5, 0, 0, time.UTC), wait(t, &l.Signals.RoundDone))
	require.Equal(t, time.Date(2026, 12, 1, 12, 10, 0, 0, time.UTC), wait(t, &l.Signals.Waiting))

	l.Stop()
	require.Len(t, ctxs, 2)
	for _, ctx := range ctxs {
		require.Error(t, ctx.Err(), "Stop cancels the rounds' ctx")
	}
}

// StartAll stops the services it started when a later one fails.
func TestStartServicesRollsBack(t *testing.T) {
	var log []string
	ok := func(name string) Service { return &fakeService{name: name, log: &log} }
	bad := &fakeService{name: "bad", log: &log, err: errors.New("no")}
	err := StartAll(context.Background(), []Service{ok("a"), ok("b"), bad, ok("c")})
	require.EqualError(t, err, "no")
	require.Equal(t, []string{"start a", "start b", "start bad", "stop b", "stop a"}, log)
}

type fakeService struct {
	name string
	log  *[]string
	err  error
}

func (f *fakeService) Start(context.Context) error {
	*f.log = append(*f.log, "start "+f.name)
	return f.err
}

func (f *fakeService) Stop() { *f.log = append(*f.log, "stop "+f.name) }

// next is the next round's time; a round that never comes fails the test
// instead of hanging it.
func next(t *testing.T, rounds <-chan time.Time) time.Time {
	t.Helper()
	select {
	case now := <-rounds:
		return now
	case <-time.After(10 * time.Second):
		t.Fatal("no round")
		return time.Time{}
	}
}

func wait(t *testing.T, s *Signal[time.Time]) time.Time {
	t.Helper()
	v, ok := s.Wait(10 * time.Second)
	require.True(t, ok, "no signal")
	return v
}

// A cron loop counts the next time from its last round's, as robfig/cron
// counts from its last firing, and skips the times that passed while a
// round ran, as SkipIfStillRunning did.
func TestLoopCronSkipsWhatARoundOverran(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	sched, err := ParseCron("@every 1m")
	require.NoError(t, err)
	rounds := 0
	l := &Loop{Name: "test", Cron: sched, Clock: clk, Round: func(context.Context, time.Time) {
		rounds++
		if rounds == 2 {
			clk.Advance(150 * time.Second) // the second round overruns two firings
		}
	}}
	l.Signals.Waiting.Init()
	require.NoError(t, l.Start(context.Background()))
	require.Equal(t, t0.Add(time.Minute), wait(t, &l.Signals.Waiting))
	clk.Advance(time.Minute)
	// From 12:01 the round runs to 12:03:30: 12:02 and 12:03 are skipped.
	require.Equal(t, t0.Add(4*time.Minute), wait(t, &l.Signals.Waiting))
	l.Stop()
	require.Equal(t, 2, rounds)
}

// A Kicked loop runs its first round, then one for each Kick on its own
// goroutine and context (Stop cancels it and waits), never one of its own
// schedule; kicks during a round ask for one more round, not one each.
// Next still tells its schedule.
func TestLoopKicked(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	rounds := make(chan time.Time, 8)
	hold := make(chan struct{})
	var ctxs []context.Context
	l := &Loop{Name: "test", Every: time.Minute, Clock: clk, Kicked: true,
		Round: func(ctx context.Context, now time.Time) {
			ctxs = append(ctxs, ctx)
			rounds <- now
			if len(ctxs) == 2 {
				<-hold
			}
		}}
	l.Kick() // not started: ignored
	require.NoError(t, l.Start(context.Background()))
	require.Equal(t, t0, next(t, rounds), "a round at start")
	clk.Advance(time.Hour)
	require.Empty(t, rounds, "no round of its own schedule")
	require.Equal(t, t0.Add(2*time.Hour), l.Next(t0.Add(2*time.Hour-time.Minute)))

	l.Kick()
	require.Equal(t, t0.Add(time.Hour), next(t, rounds), "the kicked round, at the clock's time")
	l.Kick() // while the second round runs: both ask for one round
	l.Kick()
	close(hold)
	next(t, rounds)
	l.Stop()
	require.Empty(t, rounds, "two kicks during a round gave one more round")
	require.Len(t, ctxs, 3)
	require.Error(t, ctxs[2].Err(), "Stop cancels the kicked rounds' ctx")
	l.Kick() // stopped: ignored
}

// Next of a cron loop is its schedule's next time.
func TestLoopNextCron(t *testing.T) {
	sched, err := ParseCron("@hourly")
	require.NoError(t, err)
	l := &Loop{Cron: sched}
	at := time.Date(2026, 12, 1, 12, 20, 0, 0, time.UTC)
	require.Equal(t, time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC), l.Next(at))
}
