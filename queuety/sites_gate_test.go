package queuety

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
)

// TestLookGate: the gate in front of a server's full look, poll by poll
// at given times. It looks at the first poll, at the poll whose counter
// reading moved and the one after, when the sites looked at change, after
// a look that failed, and once the idle interval is due by the next poll;
// at no other. A counters read that fails looks every poll (said once,
// and once when it answers again). The rows of this daemon's own writes
// open nothing; another client's row beside them does. A server without
// counters is not asked again; an idle interval of one poll reads nothing
// and looks every poll.
func TestLookGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const poll = 50 * time.Millisecond
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * poll) }
	var (
		value   = store.WriteCounters{Others: "Handler_write=1"}
		readErr error
		reads   int
	)
	read := func(context.Context) (store.WriteCounters, error) { reads++; return value, readErr }
	logs := &logCounter{}
	stats := &lookStats{}
	own := &ownWrites{}
	g := newLookGate(read, own, poll, time.Second, slog.New(logs), stats)
	parts := []store.DueLook{{Database: "a", Queues: []string{"default"}}}
	// looks polls from..to and names the polls that looked.
	looks := func(from, to int, ok bool) []int {
		var out []int
		for i := from; i <= to; i++ {
			if g.open(ctx, at(i), parts) {
				out = append(out, i)
				g.done(at(i), parts, ok)
			}
		}
		return out
	}
	require.Equal(t, []int{0, 1, 21}, looks(0, 25, true), "the first reading, the poll after it, then the idle interval from poll 1")
	require.EqualValues(t, 2, stats.by[lookWrites].Load())
	require.EqualValues(t, 1, stats.by[lookInterval].Load())

	value.Others = "Handler_write=2" // a client wrote
	require.Equal(t, []int{26, 27}, looks(26, 30, true))
	parts = []store.DueLook{{Database: "a", Queues: []string{"default", "low"}}} // a snapshot of paused queues expired
	require.Equal(t, []int{31}, looks(31, 35, true))
	require.EqualValues(t, 1, stats.by[lookChanged].Load())

	parts = []store.DueLook{{Database: "a", Queues: []string{"default"}}} // and again
	require.Equal(t, []int{36}, looks(36, 36, false))
	require.Equal(t, []int{37}, looks(37, 40, true), "after a failed look, the next poll looks again")
	require.EqualValues(t, 3, stats.by[lookChanged].Load())

	readErr = errors.New("connection refused")
	require.Equal(t, []int{41, 42, 43, 44}, looks(41, 44, true))
	require.Equal(t, 1, logs.count("cannot be read"), "said once")
	readErr = nil
	require.Equal(t, []int{45, 46}, looks(45, 50, true), "a reading again: the first one looks, and the next")
	require.Equal(t, 1, logs.count("answer again"))

	// This daemon's own heartbeat: the rows it changed are taken off.
	// While it is under way, the readings are compared with nothing.
	own.begin()
	value.Updated += 3
	require.Empty(t, looks(51, 51, true), "an own write under way")
	own.changed(3)
	require.Empty(t, looks(52, 52, true))
	own.end()
	require.Empty(t, looks(53, 53, true), "the own write's rows taken off")
	// Another client writes while the own write is under way: seen once
	// it has returned.
	own.begin()
	value.Updated += 2 + 1
	require.Empty(t, looks(54, 54, true))
	own.changed(2)
	own.end()
	require.Equal(t, []int{55, 56}, looks(55, 57, true), "another client's row beside the own write's")
	require.EqualValues(t, 58, stats.polls.Load())
	require.EqualValues(t, 16, stats.looks.Load())

	// A server that reports no counters is asked once.
	reads, readErr = 0, fmt.Errorf("%w: no Handler_write", store.ErrNoWriteCounters)
	g = newLookGate(read, own, poll, time.Second, slog.New(logs), stats)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, looks(0, 5, true))
	require.Equal(t, 1, reads)
	require.Equal(t, 1, logs.count("reports no write counters"))

	// A short poll: the polls within settleFor of a move look too.
	readErr = nil
	g = newLookGate(read, own, 10*time.Millisecond, time.Second, slog.New(logs), stats)
	var short []int
	for i := range 8 {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		if g.open(ctx, now, parts) {
			short = append(short, i)
			g.done(now, parts, true)
		}
	}
	require.Equal(t, []int{0, 1, 2, 3, 4}, short, "the first reading and the polls of the next 50 ms")

	// An idle interval of one poll: every poll looks, nothing is read.
	reads, readErr = 0, nil
	g = newLookGate(read, own, poll, poll, slog.New(logs), stats)
	require.Equal(t, []int{0, 1, 2, 3}, looks(0, 3, true))
	require.Zero(t, reads)
}

// TestSitesLookGate: four idle sites on two databases of one server, a
// poll every 20 ms, an idle interval of an hour, the server's write
// counters given by the test. While they stand still, the polls read them
// and send no look. A dispatch that moves them is looked for at the very
// poll that reads the move, and runs. While they cannot be read, every
// poll looks, said once; once they answer again the looks stop. A server
// without counters is looked at every poll and not asked again.
func TestSitesLookGate(t *testing.T) {
	t.Parallel()
	f := &fakeCounters{}
	g := startGateSites(t, time.Hour, f)

	// The sites started, the gate's first looks are behind: thirty polls
	// of a still server send no look.
	waitFor(t, time.Minute, "the polls after the start", func() bool { return f.readCount() >= 10 })
	r := f.readCount()
	f.waitReads(t, r+31)
	require.Equal(t, f.looksAt(r+1), f.looksAt(r+31), "full looks while the counters stood still")

	// A dispatch, as PHP's: the counters move, the next poll looks.
	site := "db1/wp_2_"
	dispatchToSite(t, g.clients[site], site, 1)
	moved := f.bump()
	waitFor(t, time.Minute, "the dispatched job", func() bool { n, _ := g.runs.count(); return n == 1 })
	f.waitReads(t, moved+1)
	require.Greater(t, f.looksAt(moved+1), f.looksAt(moved), "the poll that read the move ran no look")

	// The counters cannot be read: every poll looks, said once.
	r = f.fail(errors.New("connection refused"))
	f.waitReads(t, r+11)
	require.GreaterOrEqual(t, f.looksAt(r+11)-f.looksAt(r+1), 10, "a blind poll skipped the look")
	require.Equal(t, 1, g.logs.count("cannot be read"))
	r = f.fail(nil)
	// The reading that answers again counts as a move: the polls of the
	// next 100 ms look (settleFor), then none.
	f.waitReads(t, r+40)
	require.Equal(t, f.looksAt(r+10), f.looksAt(r+40), "full looks once the counters answer again and stand still")
	require.Equal(t, 1, g.logs.count("answer again"))

	// A server without the counters: read once, then every poll looks.
	r = f.fail(fmt.Errorf("%w: no Handler_write", store.ErrNoWriteCounters))
	polls, looks := g.s.Looks().Polls, g.counter.counted("look")
	waitFor(t, time.Minute, "ten polls", func() bool { return g.s.Looks().Polls >= polls+12 })
	require.GreaterOrEqual(t, g.counter.counted("look")-looks, 10)
	require.Equal(t, r+1, f.readCount(), "asked again")
	require.Equal(t, 1, g.logs.count("reports no write counters"))
	_, twice := g.runs.count()
	require.Empty(t, twice)
}

// TestSitesLookGateFindsDueByTime: with the counters standing still, jobs
// no write announces are found by the idle interval: one delayed into the
// future (its dispatch moved the counters, but the look then found
// nothing due), and one whose write the counters missed (a transaction
// that committed long after its rows were counted).
func TestSitesLookGateFindsDueByTime(t *testing.T) {
	t.Parallel()
	f := &fakeCounters{}
	g := startGateSites(t, 300*time.Millisecond, f)
	waitFor(t, time.Minute, "the polls after the start", func() bool { return f.readCount() >= 10 })

	site := "db0/wp_"
	_, err := g.clients[site].Dispatch(context.Background(), "count", map[string]any{"site": site}, Delay(2*time.Second))
	require.NoError(t, err)
	f.waitReads(t, f.bump()+10) // the looks of the move are behind (settleFor)
	writes, interval := g.s.Looks().Writes, g.s.Looks().Interval
	dispatchToSite(t, g.clients["db1/wp_"], "db1/wp_", 1) // the counters not moved
	waitFor(t, time.Minute, "both jobs", func() bool { n, _ := g.runs.count(); return n == 2 })
	require.Equal(t, writes, g.s.Looks().Writes, "looks opened by a move after the last one")
	require.Greater(t, g.s.Looks().Interval, interval)
	_, twice := g.runs.count()
	require.Empty(t, twice)
}

// TestSitesLookGateServerCounters: with the server's own counters and an
// idle interval of an hour, a job dispatched on an idle site (a plain
// INSERT from another connection, as PHP's) is found and runs. (Other
// tests write on this server, so its counters seldom stand still here;
// TestWriteCounters in sql/ shows an INSERT moves them and an idle
// daemon's reads do not.)
func TestSitesLookGateServerCounters(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	c := siteClient(t, dsn, "wp_")
	runs := &siteRuns{runs: map[string]int{}}
	reg := runs.registry()
	s := runSites(t, SitesConfig{
		Discover: func(context.Context) ([]Site, error) {
			return []Site{{Name: "one", Config: Config{DSN: dsn, TablePrefix: "wp_", RescueSchedule: "off", ShutdownGrace: time.Second, Logger: testLogger()}}}, nil
		},
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 20 * time.Millisecond, IdleLookInterval: time.Hour,
	})
	<-s.Started()
	waitFor(t, time.Minute, "polls after the start", func() bool { return s.Looks().Polls >= 10 })
	for i := range 3 {
		dispatchToSite(t, c, "one", 1)
		waitFor(t, time.Minute, "the dispatched job", func() bool { n, _ := runs.count(); return n == i+1 })
	}
	require.Zero(t, s.Looks().Blind, "the server's counters were read")
}

// TestSitesIdleLookIntervalChecked: an idle interval shorter than the
// poll is refused, naming both.
func TestSitesIdleLookIntervalChecked(t *testing.T) {
	t.Parallel()
	discover := func(context.Context) ([]Site, error) { return nil, nil }
	_, err := NewSites(SitesConfig{Discover: discover, LookInterval: 100 * time.Millisecond, IdleLookInterval: 50 * time.Millisecond})
	require.ErrorContains(t, err, "IdleLookInterval 50ms: at least LookInterval 100ms")
	s, err := NewSites(SitesConfig{Discover: discover, LookInterval: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, s.cfg.IdleLookInterval, "the default, when the poll is longer")
	s, err = NewSites(SitesConfig{Discover: discover})
	require.NoError(t, err)
	require.Equal(t, DefaultSitesIdleLook, s.cfg.IdleLookInterval)
}

// gateSites is a running Sites of four sites (two prefixes on each of two
// databases) whose gate reads the test's counters.
type gateSites struct {
	s       *Sites
	clients map[string]*Client
	runs    *siteRuns
	counter *statementCounter
	logs    *logCounter
}

func startGateSites(t *testing.T, idle time.Duration, f *fakeCounters) *gateSites {
	t.Helper()
	g := &gateSites{clients: map[string]*Client{}, runs: &siteRuns{runs: map[string]int{}}, counter: &statementCounter{}, logs: &logCounter{}}
	var sites []Site
	for d, dsn := range []string{testdb.New(t), testdb.New(t)} {
		for _, p := range []string{"wp_", "wp_2_"} {
			name := fmt.Sprintf("db%d/%s", d, p)
			g.clients[name] = siteClient(t, dsn, p)
			sites = append(sites, Site{Name: name, Config: Config{DSN: dsn, TablePrefix: p, RescueSchedule: "off",
				ShutdownGrace: time.Second, Logger: testLogger()}})
		}
	}
	reg := g.runs.registry()
	s, err := NewSites(SitesConfig{
		Discover:     func(context.Context) ([]Site, error) { return sites, nil },
		Registry:     func(Site) (*Registry, error) { return reg, nil },
		LookInterval: 20 * time.Millisecond, IdleLookInterval: idle, Logger: slog.New(g.logs),
	})
	require.NoError(t, err)
	g.s = s
	g.counter.start()
	f.counter = g.counter
	s.open, s.readCounters = g.counter.open, f.read
	goRunStarted(t, context.Background(), s)
	return g
}

// fakeCounters are a server's write counters as a test sets them. Each
// read records the look statements counted so far: a read is made after
// the previous poll's look finished, so looksAt(i+1) - looksAt(i) are the
// looks the poll of read i ran.
type fakeCounters struct {
	mu      sync.Mutex
	value   int
	err     error
	looks   []int
	counter *statementCounter
}

func (f *fakeCounters) read(context.Context, *sqlx.DB) (store.WriteCounters, error) {
	looks := f.counter.counted("look")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks = append(f.looks, looks)
	if f.err != nil {
		return store.WriteCounters{}, f.err
	}
	return store.WriteCounters{Others: fmt.Sprint("Handler_write=", f.value)}, nil
}

func (f *fakeCounters) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.looks)
}

// waitReads waits until read i was made.
func (f *fakeCounters) waitReads(t *testing.T, i int) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("read %d of the counters", i), func() bool { return f.readCount() > i })
}

// looksAt is the look statements counted when read i (from 0) was made.
func (f *fakeCounters) looksAt(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks[i]
}

// bump moves the counters; it returns the index of the first read that
// sees them moved.
func (f *fakeCounters) bump() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value++
	return len(f.looks)
}

// fail makes the reads fail with err (nil: answer again); it returns the
// index of the first read that does.
func (f *fakeCounters) fail(err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	return len(f.looks)
}

// logCounter is a slog.Handler that counts the records whose message
// contains a string, each string asked about.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }

func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *logCounter) count(part string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}
