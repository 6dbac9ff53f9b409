package poolset_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/steps"
	"github.com/queuety-go/queuety/queuety/internal/poolset"
	"github.com/queuety-go/queuety/workflow"
)

// reducerSite is a site whose PHP has the LockReducer for_each reducer,
// which records its runs as "<site> reduce".
func reducerSite(f *fixture, name string) string {
	handlers, err := filepath.Abs("testdata/handlers.php")
	require.NoError(f.t, err)
	return fmt.Sprintf(`use Queuety\Bridge\Handlers;
define('POOLSET_SITE', %q);
require %q;
Handlers::register('LockReducer', static function (array $state, array $aggregate): array {
    poolset_ran(['n' => 'reduce']);
    return ['reduced' => count($aggregate['results'])];
});`, name, handlers)
}

// TestCallsWithRowLocksNeverStartOrWait: a call marked as made with row
// locks held neither starts its site's pool nor waits for a place: a
// reducer fails at once with workflow.ErrPHPNotReady, and so does the read
// of a class's settings not read yet; no process is started. Held, the
// pool is started (or waited for) and then takes them.
func TestCallsWithRowLocksNeverStartOrWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{Max: 1})
	h := s.Attach("b", "b", f.site("b", reducerSite(f, "b")))
	locked := workflow.WithRowLocks(t.Context())

	_, err := h.RunReducer(locked, "LockReducer", []byte("[]"), []byte(`{"results":[]}`), []byte("[]"))
	require.ErrorIs(t, err, workflow.ErrPHPNotReady)
	_, err = h.ClassMetadata(locked, "SomeClass")
	require.ErrorIs(t, err, workflow.ErrPHPNotReady)
	require.Equal(t, poolset.StateNone, state(s, "b"), "no pool started")
	require.Empty(t, f.procs(), "no PHP process")

	release, err := h.Hold(t.Context())
	require.NoError(t, err)
	out, err := h.RunReducer(locked, "LockReducer", []byte("[]"), []byte(`{"results":[1,2]}`), []byte("[]"))
	require.NoError(t, err)
	require.JSONEq(t, `{"reduced":2}`, string(out))
	release()
	require.Equal(t, map[string]int{"b reduce": 1}, f.runs())
}

// busySite has site a take the only place of s (Max 1, a Turn of an
// hour) and keep it with a job that runs until the returned open is
// called; open waits for that job.
func busySite(t *testing.T, f *fixture, s *poolset.Set) (open func()) {
	t.Helper()
	ha := s.Attach("a", "a", f.site("a"))
	gate := filepath.Join(f.dir, "gate")
	done := make(chan error, 1)
	go func() { done <- run(t, ha, "gate", map[string]string{"n": "1", "gate": gate}) }()
	waitFor(t, "site a's pool running", func() bool { return state(s, "a") == poolset.StateRunning })
	return func() {
		require.NoError(t, os.WriteFile(gate, nil, 0o644))
		require.NoError(t, <-done)
	}
}

// lockNow locks the rows of table with these ids from a connection of its
// own, failing at once (NOWAIT) if another transaction holds one.
func lockNow(t *testing.T, env *enginetest.Env, table string, ids ...int64) {
	t.Helper()
	tx, err := env.DB.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	for _, id := range ids {
		var got int64
		require.NoError(t, tx.QueryRowContext(t.Context(), "SELECT id FROM `"+env.Store.Tables()[table]+"` WHERE id = ? FOR UPDATE NOWAIT", id).Scan(&got),
			"%s row %d is free", table, id)
	}
	require.NoError(t, tx.Commit())
}

// phpEngine is an engine of env whose PHP is the Handle h.
func phpEngine(t *testing.T, env *enginetest.Env, h *poolset.Handle) *engine.Engine {
	return engine.NewEngine(engine.EngineConfig{Store: env.Store, Handlers: enginetest.FixtureHandlers(t),
		Kinds: steps.All(), Runner: h, Metadata: h})
}

// TestForEachReducerWaitsForItsPoolWithNoRowLocked: with one pool place
// (--php-pools 1) held by a busy site, the last branch of a for_each on
// another site, whose PHP reducer needs its pool, does not wait with the
// workflow and job rows locked: while it waits for a place another
// connection locks both rows at once (NOWAIT), and once the place comes
// the step completes; every branch ran once, the reducer once.
func TestForEachReducerWaitsForItsPoolWithNoRowLocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{Max: 1, Turn: time.Hour})
	hb := s.Attach("b", "b", f.site("b", reducerSite(f, "b")))

	env := enginetest.New(t, steps.All())
	env.Engine = phpEngine(t, env, hb)
	id := env.Dispatch(workflow.New("reduce").ForEach("items", "ItemStep", workflow.Reducer("LockReducer")).Then("IncStep"),
		enginetest.Obj("items", []any{"x", "yy"}))
	place := env.PendingOf(id)
	require.Len(t, place, 1)
	require.NoError(t, env.RunJob(place[0]), "the for_each placeholder")
	branches := env.PendingOf(id)
	require.Len(t, branches, 2)
	require.NoError(t, env.RunJob(branches[0]))

	open := busySite(t, f, s)
	// The last branch: its reducer needs b's pool, which has no place.
	job, ok, err := env.Store.ClaimJobByID(t.Context(), branches[1], "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	type result struct{ stepErr, err error }
	done := make(chan result, 1)
	go func() {
		stepErr, err := env.Engine.Run(t.Context(), job, enginetest.Decide)
		done <- result{stepErr, err}
	}()
	waitFor(t, "site b waiting for a place", func() bool { return state(s, "b") == poolset.StateWaiting })

	// Meanwhile the rows are free.
	lockNow(t, env, "workflows", id)
	lockNow(t, env, "jobs", job.ID)
	select {
	case r := <-done:
		t.Fatalf("the step ended before b had a pool: %v / %v", r.stepErr, r.err)
	default:
	}

	open()
	r := <-done
	require.NoError(t, r.err)
	require.NoError(t, r.stepErr)

	require.Equal(t, map[string]int{"a 1": 1, "b reduce": 1}, f.runs(), "the reducer ran once")
	require.Equal(t, "2", env.Field(id, "reduced"))
	for _, j := range env.Jobs(id) {
		if j.Handler == "ItemStep" {
			require.Equal(t, "completed", j.Status, "branch %d", j.ID)
			require.EqualValues(t, 1, j.Attempts, "branch %d ran once", j.ID)
		}
	}
	require.Len(t, env.PendingOf(id), 1, "the next step enqueued once")
	started := 0
	for _, e := range env.LogEvents(id) {
		if e == "started" {
			started++
		}
	}
	require.Equal(t, 3, started, "one start each: the placeholder and two branches")
}

// TestSignalReadsClassSettingsWithNoRowLocked: a signal that resumes a
// workflow whose next step is a PHP class this daemon has not read (a
// restart forgot them) does not read it with the workflow locked: at the
// cap (one place, held) it waits for its pool with the row free, then
// writes the signal and the next step's job once.
func TestSignalReadsClassSettingsWithNoRowLocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{Max: 1, Turn: time.Hour})
	hb := s.Attach("b", "b", f.site("b"))

	env := enginetest.New(t, steps.All())
	id := env.Dispatch(workflow.New("signal").WaitForSignal("go").Then("PhpStep"), nil)
	env.RunOf(id)
	require.Equal(t, "waiting_for_signal", env.Workflow(id).Status)

	open := busySite(t, f, s)
	e := phpEngine(t, env, hb)
	done := make(chan error, 1)
	go func() { done <- e.Signal(t.Context(), id, "go", enginetest.Obj("by", "test")) }()
	waitFor(t, "site b waiting for a place", func() bool { return state(s, "b") == poolset.StateWaiting })

	lockNow(t, env, "workflows", id)
	select {
	case err := <-done:
		t.Fatalf("the signal ended before b had a pool: %v", err)
	default:
	}

	open()
	require.NoError(t, <-done)
	require.Equal(t, "running", env.Workflow(id).Status)
	var signals int
	require.NoError(t, env.DB.Get(&signals, "SELECT COUNT(*) FROM `"+env.Store.Tables()["signals"]+"` WHERE workflow_id = ?", id))
	require.Equal(t, 1, signals, "the signal written once")
	var next []string
	for _, j := range env.Jobs(id) {
		if j.Handler == "PhpStep" {
			next = append(next, j.Status)
		}
	}
	require.Equal(t, []string{"pending"}, next, "the next step's job written once")
}

// TestPeekedClassKnownWithoutPool: a class peeked at while its pool runs
// (the engine does so for the next step's classes) is read in the
// background and kept for the key: once the pool is stopped when idle, a
// read with row locks held still answers it.
func TestPeekedClassKnownWithoutPool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newSet(t, poolset.Config{Max: 1, Idle: 200 * time.Millisecond})
	h := s.Attach("b", "b", f.site("b"))
	locked := workflow.WithRowLocks(t.Context())

	release, err := h.Hold(t.Context())
	require.NoError(t, err)
	_, known := h.PeekClassMetadata("PeekedClass")
	require.False(t, known, "not read yet")
	waitFor(t, "the peeked class kept", func() bool { return h.Known("PeekedClass") })
	release()
	waitFor(t, "the idle pool stopped", func() bool { return state(s, "b") == poolset.StateNone && len(f.procs()) == 0 })
	_, err = h.ClassMetadata(locked, "PeekedClass")
	require.NoError(t, err, "known without a pool")
	_, err = h.ClassMetadata(locked, "OtherClass")
	require.ErrorIs(t, err, workflow.ErrPHPNotReady, "a class never read, no pool")
	require.Equal(t, poolset.StateNone, state(s, "b"), "no pool started")
}
