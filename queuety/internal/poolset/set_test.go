package poolset_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/internal/phppool"
	"github.com/queuety-go/queuety/queuety/internal/poolset"
)

// A Handle is everything the PHP pool is to a registry.
var (
	_ engine.StepRunner     = (*poolset.Handle)(nil)
	_ engine.CallableRunner = (*poolset.Handle)(nil)
)

// fixture is a directory of test sites, each a bootstrap of its own (so a
// pool's processes name their site on their command line) over
// testdata/handlers.php, which appends every process start to dir/starts
// and every job run to dir/ran.
type fixture struct {
	t   *testing.T
	dir string
	cmd []string // php and the worker script
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	php, err := exec.LookPath("php")
	require.NoError(t, err, "php is needed (scripts/ensure-php.sh installs it)")
	worker, err := filepath.Abs("../../../php-bridge/bin/queuety-php-worker")
	require.NoError(t, err)
	return &fixture{t: t, dir: t.TempDir(), cmd: []string{php, worker}}
}

// site is the pool configuration of a site: one process over its own
// bootstrap; body replaces the include of the handlers.
func (f *fixture) site(name string, body ...string) phppool.Config {
	f.t.Helper()
	handlers, err := filepath.Abs("testdata/handlers.php")
	require.NoError(f.t, err)
	dir := filepath.Join(f.dir, "sites", name)
	require.NoError(f.t, os.MkdirAll(dir, 0o755))
	src := fmt.Sprintf("<?php\ndefine('POOLSET_SITE', %q);\ndefine('POOLSET_DIR', %q);\nrequire %q;\n", name, f.dir, handlers)
	if len(body) > 0 {
		src = fmt.Sprintf("<?php\ndefine('POOLSET_DIR', %q);\n%s\n", f.dir, body[0])
	}
	app := filepath.Join(dir, "app.php")
	require.NoError(f.t, os.WriteFile(app, []byte(src), 0o644))
	return phppool.Config{Workers: 1, Command: append(append([]string{}, f.cmd...), "--bootstrap", app), StartTimeout: 20 * time.Second}
}

func (f *fixture) lines(file string) []string {
	b, err := os.ReadFile(filepath.Join(f.dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(f.t, err)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}

// ran is the jobs run, as "site_n_pid".
func (f *fixture) ran() []string { return f.lines("ran") }

// runs is the jobs run, by "site n".
func (f *fixture) runs() map[string]int {
	m := map[string]int{}
	for _, l := range f.ran() {
		p := strings.Split(l, "_")
		m[p[0]+" "+p[1]]++
	}
	return m
}

// procs counts the live PHP processes of the fixture's sites by site, from
// their command lines (a zombie's is empty).
func (f *fixture) procs() map[string]int {
	out := map[string]int{}
	prefix := filepath.Join(f.dir, "sites") + "/"
	entries, err := os.ReadDir("/proc")
	require.NoError(f.t, err)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if rest, ok := strings.CutPrefix(arg, prefix); ok {
				out[strings.Split(rest, "/")[0]]++
			}
		}
	}
	return out
}

func newSet(t *testing.T, cfg poolset.Config) *poolset.Set {
	t.Helper()
	s, err := poolset.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	return s
}

func job(t *testing.T, handler string, payload map[string]string) *queuety.Job {
	t.Helper()
	o := phpjson.NewObject()
	for k, v := range payload {
		o.Set(k, phpjson.String(v))
	}
	raw, err := phpjson.Encode(phpjson.ObjectValue(o))
	require.NoError(t, err)
	return &queuety.Job{ID: 1, Queue: "default", Handler: handler, Attempt: 1, MaxAttempts: 3, Payload: phpjson.ObjectValue(o), RawPayload: raw}
}

func run(t *testing.T, h *poolset.Handle, handler string, payload map[string]string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return h.Handle(ctx, job(t, handler, payload))
}

// waitFor polls cond until it holds; the timeout only fails a test that
// would otherwise hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func state(s *poolset.Set, site string) string {
	st, _ := s.Status(site)
	return st.State
}

// TestPoolStartsOnDemandAndIsReapedWhenIdle: attached sites start nothing;
// the first PHP call starts the site's pool and runs once; a pool with no
// call for Idle is stopped (its processes gone) and the next call starts
// it again; the class settings read before the reap are still known after
// it, without a pool (the claim peeks at them with row locks held).
func TestPoolStartsOnDemandAndIsReapedWhenIdle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := clock.NewFake(time.Now())
	s := newSet(t, poolset.Config{Idle: time.Minute, Clock: clk})
	a := s.Attach("a", "a", f.site("a"))
	s.Attach("b", "b", f.site("b"))
	s.RunOnce(t.Context(), clk.Now())
	require.Empty(t, f.procs(), "attached sites start no process")
	require.Equal(t, poolset.StateNone, state(s, "a"))
	_, known := a.PeekClassMetadata("record")
	require.False(t, known)
	require.Empty(t, f.procs(), "a peek at a class's settings starts no pool")

	require.NoError(t, run(t, a, "record", map[string]string{"n": "1"}))
	require.Equal(t, map[string]int{"a 1": 1}, f.runs())
	_, err := a.ClassMetadata(t.Context(), "record")
	require.NoError(t, err)
	require.Equal(t, poolset.StateIdle, state(s, "a"))
	require.Equal(t, poolset.StateNone, state(s, "b"), "b needed no PHP")
	require.Equal(t, 2, f.procs()["a"], "its job process and the one that read the class's settings")
	require.Zero(t, f.procs()["b"])

	clk.Advance(59 * time.Second)
	s.RunOnce(t.Context(), clk.Now())
	require.Equal(t, poolset.StateIdle, state(s, "a"), "not idle for a minute yet")
	clk.Advance(time.Second)
	s.RunOnce(t.Context(), clk.Now())
	waitFor(t, "the idle pool stopped", func() bool { return state(s, "a") == poolset.StateNone && len(f.procs()) == 0 })
	m, known := a.PeekClassMetadata("record")
	require.True(t, known, "the settings outlive the pool")
	require.Equal(t, queuety.ClassMetadataSource(a).HandlerMetadata("record"), m)
	require.Empty(t, f.procs(), "known settings start no pool")

	require.NoError(t, run(t, a, "record", map[string]string{"n": "2"}))
	require.Equal(t, map[string]int{"a 1": 1, "a 2": 1}, f.runs())
	st, _ := s.Status("a")
	require.Equal(t, 2, st.Starts)
	require.Len(t, st.PIDs, 1)
	require.Len(t, f.lines("starts"), 3, "a's job process twice and its settings process once")
}

// TestPoolsCappedTakeTurns: with Max 2 and five sites each running jobs at
// once, every job runs once and never more than two sites have PHP
// processes alive (counted from /proc all along); the sites past the cap
// wait their turn, none fails.
func TestPoolsCappedTakeTurns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{Max: 2})
	sites := []string{"a", "b", "c", "d", "e"}
	handles := map[string]*poolset.Handle{}
	for _, n := range sites {
		handles[n] = s.Attach(n, n, f.site(n))
	}

	var most sync.Map // sites with processes at once → seen
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			most.Store(len(f.procs()), true)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	const perSite = 4
	var wg sync.WaitGroup
	errs := make(chan error, len(sites)*perSite)
	want := map[string]int{}
	for _, n := range sites {
		for i := range perSite {
			want[fmt.Sprintf("%s %d", n, i)] = 1
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- run(t, handles[n], "record", map[string]string{"n": strconv.Itoa(i)})
			}()
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, want, f.runs(), "each job once")
	most.Range(func(k, _ any) bool {
		require.LessOrEqual(t, k.(int), 2, "sites with PHP processes alive at once")
		return true
	})
	require.LessOrEqual(t, s.Stats().Peak, 2)
	starts := 0
	for _, n := range sites {
		st, _ := s.Status(n)
		starts += st.Starts
		require.NotEqual(t, poolset.StateFailed, st.State, n)
	}
	require.GreaterOrEqual(t, starts, len(sites), "every site had a pool")
}

// TestBusyPoolGivesWayAfterItsTurn: at Max 1, a site whose pool is busy
// keeps it until its Turn is over; then the pool takes no new job, stops
// once its running job ends, and the waiting site runs; the first site's
// next job waits for its next turn, which comes when the other's pool has
// been idle for a moment. A waiting call whose context ends leaves the
// queue.
func TestBusyPoolGivesWayAfterItsTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := clock.NewFake(time.Now())
	s := newSet(t, poolset.Config{Max: 1, Turn: 10 * time.Second, Clock: clk})
	a := s.Attach("a", "a", f.site("a"))
	b := s.Attach("b", "b", f.site("b"))
	c := s.Attach("c", "c", f.site("c"))
	gate := filepath.Join(f.dir, "gate")

	done := make(chan string, 3)
	go func() {
		require.NoError(t, run(t, a, "gate", map[string]string{"n": "1", "gate": gate}))
		done <- "a1"
	}()
	waitFor(t, "a's job running", func() bool { st, _ := s.Status("a"); return st.Calls == 1 && st.State == poolset.StateRunning })
	go func() {
		require.NoError(t, run(t, b, "record", map[string]string{"n": "1"}))
		done <- "b1"
	}()
	waitFor(t, "b waiting", func() bool { return state(s, "b") == poolset.StateWaiting })

	// c gives up waiting (its worker stops): it leaves the queue.
	ctx, cancel := context.WithCancel(t.Context())
	cerr := make(chan error, 1)
	go func() { cerr <- c.Handle(ctx, job(t, "record", map[string]string{"n": "1"})) }()
	waitFor(t, "c waiting", func() bool { return state(s, "c") == poolset.StateWaiting })
	cancel()
	require.ErrorIs(t, <-cerr, context.Canceled)
	require.Equal(t, poolset.StateNone, state(s, "c"))
	require.Equal(t, 1, s.Stats().Waiting)

	s.RunOnce(t.Context(), clk.Now())
	require.Equal(t, poolset.StateRunning, state(s, "a"), "a's turn is not over")
	clk.Advance(10 * time.Second)
	s.RunOnce(t.Context(), clk.Now())
	require.Equal(t, poolset.StateDraining, state(s, "a"))
	go func() {
		require.NoError(t, run(t, a, "record", map[string]string{"n": "2"}))
		done <- "a2"
	}()
	waitFor(t, "a's next job queued behind b", func() bool { return s.Stats().Waiting == 2 })
	require.Empty(t, f.ran(), "a's first job still running, nothing else ran")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	require.Equal(t, "a1", <-done)
	require.Equal(t, "b1", <-done)
	waitFor(t, "b's pool idle", func() bool { return state(s, "b") == poolset.StateIdle })
	require.Equal(t, poolset.StateWaiting, state(s, "a"), "b's pool was idle only now: a waits")
	clk.Advance(time.Second) // b idle for a moment: its place goes to a
	s.RunOnce(t.Context(), clk.Now())
	require.Equal(t, "a2", <-done)

	var order []string
	for _, l := range f.ran() {
		p := strings.Split(l, "_")
		order = append(order, p[0]+p[1])
	}
	require.Equal(t, []string{"a1", "b1", "a2"}, order)
	require.Equal(t, 1, s.Stats().Peak)
	st, _ := s.Status("a")
	require.Equal(t, 2, st.Starts)
}

// TestPoolStartFailure: a pool that cannot start fails the call with its
// reason, reported as failed; calls within Retry fail at once without
// starting PHP again; the next call after Retry tries again. Once two
// starts in a row failed the pool is down (queuety.ErrPHPDown), not after
// one; a start that succeeds clears the count, so a later failure is
// again one.
func TestPoolStartFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clk := clock.NewFake(time.Now())
	s := newSet(t, poolset.Config{Retry: 5 * time.Second, Idle: time.Minute, Clock: clk})
	broken := `file_put_contents(POOLSET_DIR . '/starts', "broken\n", FILE_APPEND); exit(1);`
	h := s.Attach("broken", "broken", f.site("broken", broken))

	err := run(t, h, "record", map[string]string{"n": "1"})
	var se *poolset.StartError
	require.ErrorAs(t, err, &se)
	require.Contains(t, err.Error(), "failed to start")
	require.NotErrorIs(t, err, queuety.ErrPHPDown, "one failed start may be passing")
	st, _ := s.Status("broken")
	require.Equal(t, poolset.StateFailed, st.State)
	require.Contains(t, st.Error, "failed to start")
	require.Len(t, f.lines("starts"), 1)

	require.ErrorAs(t, run(t, h, "record", map[string]string{"n": "2"}), &se)
	_, err = h.ClassMetadata(t.Context(), "record")
	require.ErrorAs(t, err, &se)
	require.NotErrorIs(t, err, queuety.ErrPHPDown)
	require.Len(t, f.lines("starts"), 1, "not started again within Retry")

	clk.Advance(5 * time.Second)
	_, err = h.ClassMetadata(t.Context(), "record")
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, queuety.ErrPHPDown, "failed again at its retry")
	require.Contains(t, err.Error(), "failed to start 2 times in a row")
	require.Len(t, f.lines("starts"), 2, "started again after Retry")
	require.ErrorIs(t, run(t, h, "record", map[string]string{"n": "3"}), queuety.ErrPHPDown, "down until a start succeeds")
	require.Empty(t, f.ran())
	require.Zero(t, s.Stats().Alive)

	// Fixed: the next start after Retry succeeds and clears the count.
	f.site("broken")
	clk.Advance(5 * time.Second)
	require.NoError(t, run(t, h, "record", map[string]string{"n": "4"}))
	require.Equal(t, map[string]int{"broken 4": 1}, f.runs())
	// Reaped when idle, then broken again: one failure, not down.
	clk.Advance(time.Minute)
	s.RunOnce(t.Context(), clk.Now())
	waitFor(t, "the idle pool stopped", func() bool { return state(s, "broken") == poolset.StateNone })
	f.site("broken", broken)
	err = run(t, h, "record", map[string]string{"n": "5"})
	require.ErrorAs(t, err, &se)
	require.Equal(t, 1, se.FailedStarts)
	require.NotErrorIs(t, err, queuety.ErrPHPDown)
}

// TestSharedKeyOnePool: sites attached under one key run in one pool (one
// process here), which stops when the last of them is detached (a site
// attached twice, detached twice).
func TestSharedKeyOnePool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{})
	cfg := f.site("app")
	one := s.Attach("one", "app", cfg)
	two := s.Attach("two", "app", cfg)
	require.NoError(t, run(t, one, "record", map[string]string{"n": "1"}))
	require.NoError(t, run(t, two, "record", map[string]string{"n": "2"}))
	ran := f.ran()
	require.Len(t, ran, 2)
	pid := func(l string) string { return l[strings.LastIndex(l, "_")+1:] }
	require.Equal(t, pid(ran[0]), pid(ran[1]), "one process ran both sites' jobs")
	require.Len(t, f.lines("starts"), 1)
	st, _ := s.Status("one")
	require.Equal(t, []string{"two"}, st.SharedWith)
	require.Equal(t, 1, s.Stats().Peak)

	s.Detach("one")
	require.Equal(t, poolset.StateIdle, state(s, "two"), "two still uses it")
	require.Equal(t, 1, f.procs()["app"])
	// two started again before its old worker's Detach: each Attach has
	// its Detach.
	again := s.Attach("two", "app", cfg)
	s.Detach("two")
	require.NoError(t, run(t, again, "record", map[string]string{"n": "3"}))
	require.Len(t, f.lines("starts"), 1, "the same pool")
	s.Detach("two")
	require.Empty(t, f.procs(), "the last site detached: stopped")
	require.Zero(t, s.Stats().Alive)
}
