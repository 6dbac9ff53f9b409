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
	return fmt.Sprintf(`define('POOLSET_SITE', %q);
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
	body := reducerSite(f, "b")
	h := s.Attach("b", "b", f.site("b", "use Queuety\\Bridge\\Handlers;\n"+body))
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
	ha := s.Attach("a", "a", f.site("a"))
	hb := s.Attach("b", "b", f.site("b", "use Queuety\\Bridge\\Handlers;\n"+reducerSite(f, "b")))

	env := enginetest.New(t, steps.All())
	env.Engine = engine.NewEngine(engine.EngineConfig{Store: env.Store, Handlers: enginetest.FixtureHandlers(t),
		Kinds: steps.All(), Runner: hb, Metadata: hb})
	id := env.Dispatch(workflow.New("reduce").ForEach("items", "ItemStep", workflow.Reducer("LockReducer")).Then("IncStep"),
		enginetest.Obj("items", []any{"x", "yy"}))
	place := env.PendingOf(id)
	require.Len(t, place, 1)
	require.NoError(t, env.RunJob(place[0]), "the for_each placeholder")
	branches := env.PendingOf(id)
	require.Len(t, branches, 2)
	require.NoError(t, env.RunJob(branches[0]))

	// Site a takes the only place and keeps it (its job waits for a
	// gate; its turn is an hour).
	gate := filepath.Join(f.dir, "gate")
	aDone := make(chan error, 1)
	go func() { aDone <- run(t, ha, "gate", map[string]string{"n": "1", "gate": gate}) }()
	waitFor(t, "site a's pool running", func() bool { return state(s, "a") == poolset.StateRunning })

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

	// Meanwhile the rows are free: another connection locks them at once.
	tx, err := env.DB.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	var got int64
	require.NoError(t, tx.QueryRowContext(t.Context(), "SELECT id FROM wp_queuety_workflows WHERE id = ? FOR UPDATE NOWAIT", id).Scan(&got))
	require.NoError(t, tx.QueryRowContext(t.Context(), "SELECT id FROM wp_queuety_jobs WHERE id = ? FOR UPDATE NOWAIT", job.ID).Scan(&got))
	require.NoError(t, tx.Commit())
	select {
	case r := <-done:
		t.Fatalf("the step ended before b had a pool: %v / %v", r.stepErr, r.err)
	default:
	}

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	require.NoError(t, <-aDone)
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
