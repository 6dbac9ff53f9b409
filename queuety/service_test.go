package queuety

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
)

// A ticker service runs a round at start and then one per interval of its
// clock: a fake clock drives it with no sleep, and Stop waits for it.
func TestTickerServiceRunsOnItsClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	rounds := make(chan time.Time)
	s := &tickerService{name: "test", interval: time.Minute, log: orDiscard(nil), clock: clk,
		round: func(_ context.Context, now time.Time) { rounds <- now }}
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
	s := &tickerService{name: "test", interval: time.Second, log: orDiscard(nil), clock: clk, skipFirst: true,
		round: func(_ context.Context, now time.Time) { rounds <- now }}
	require.NoError(t, s.Start(context.Background()))
	clk.Advance(time.Second)
	require.Equal(t, t0.Add(time.Second), next(t, rounds))
	s.Stop()
}

// startServices stops the services it started when a later one fails.
func TestStartServicesRollsBack(t *testing.T) {
	var log []string
	ok := func(name string) service { return &fakeService{name: name, log: &log} }
	bad := &fakeService{name: "bad", log: &log, err: errors.New("no")}
	err := startServices(context.Background(), []service{ok("a"), ok("b"), bad, ok("c")})
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
