package steps_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine"
	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/steps"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// pagedEnv is an engine environment whose for_each steps plan in pages of
// two items, and a workflow of one for_each step over ten items, its
// placeholder claimed by "test-worker" (ItemStep handles every item).
func pagedEnv(t *testing.T) (env *engineEnv, workflowID int64, placeholder *store.JobRow) {
	t.Helper()
	env = newEngineEnv(t)
	env.Engine = engine.NewEngine(engine.EngineConfig{Store: env.Store, Handlers: env.Engine.Handlers(), Kinds: steps.All(), ForEachPageSize: 2})
	items := make([]any, 10)
	for i := range items {
		items[i] = i
	}
	workflowID = env.Dispatch(workflow.New("paged").ForEach("items", "ItemStep"), enginetest.Obj("items", items))
	ids := env.PendingOf(workflowID)
	require.Len(t, ids, 1)
	job, ok, err := env.Store.ClaimJobByID(env.Ctx(), ids[0], "test-worker")
	require.NoError(t, err)
	require.True(t, ok)
	return env, workflowID, job
}

func (env *engineEnv) table(name string) string { return "`" + env.Store.Tables()[name] + "`" }

func (env *engineEnv) count(query string, args ...any) int {
	env.T.Helper()
	var n int
	require.NoError(env.T, env.DB.Get(&n, query, args...))
	return n
}

// TestForEachPageRenewsThePlaceholderLease (N4): every page of a paged
// plan after which more pages follow renews the placeholder's reserved_at
// in its own transaction, so a plan that runs for minutes is not taken by
// a stale sweep (ours, or PHP's, which would plan from item 0 again) while
// its pages still commit. A trigger on the cursor table records the
// placeholder's reserved_at as each page's transaction sees it; the
// placeholder was reserved an hour ago.
func TestForEachPageRenewsThePlaceholderLease(t *testing.T) {
	t.Parallel()
	env, _, job := pagedEnv(t)
	_, err := env.DB.Exec("CREATE TABLE lease_seen (reserved_at DATETIME NULL)")
	require.NoError(t, err)
	for _, on := range []string{"INSERT", "UPDATE"} {
		_, err = env.DB.Exec("CREATE TRIGGER lease_seen_" + on + " AFTER " + on + " ON " + env.table("for_each_plans") +
			" FOR EACH ROW INSERT INTO lease_seen SELECT reserved_at FROM " + env.table("jobs") + " WHERE id = NEW.job_id")
		require.NoError(t, err)
	}
	_, err = env.DB.Exec("UPDATE "+env.table("jobs")+" SET reserved_at = NOW() - INTERVAL 1 HOUR WHERE id = ?", job.ID)
	require.NoError(t, err)

	stepErr, err := env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, err)
	require.NoError(t, stepErr)

	require.Equal(t, 4, env.count("SELECT COUNT(*) FROM lease_seen"), "five pages: four move the cursor, the last drops it")
	require.Zero(t, env.count("SELECT COUNT(*) FROM lease_seen WHERE reserved_at IS NULL OR reserved_at < NOW() - INTERVAL 1 MINUTE"),
		"each page renewed the lease before moving the cursor")
	require.Equal(t, 10, env.count("SELECT COUNT(*) FROM "+env.table("jobs")+" WHERE handler = 'ItemStep'"))
}

// TestForEachPlanStopsWhenItsAttemptLostTheJob (N4): a run whose
// placeholder was handed back and claimed again by another worker (one
// more attempt, another owner) while it was on its way plans nothing: the
// run that holds the job now plans it, from the cursor.
func TestForEachPlanStopsWhenItsAttemptLostTheJob(t *testing.T) {
	t.Parallel()
	env, _, job := pagedEnv(t)
	_, err := env.DB.Exec("UPDATE "+env.table("jobs")+" SET attempts = attempts + 1, reserved_by = 'other-worker' WHERE id = ?", job.ID)
	require.NoError(t, err)

	stepErr, err := env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	require.NoError(t, err)
	require.NoError(t, stepErr)

	require.Zero(t, env.count("SELECT COUNT(*) FROM "+env.table("jobs")+" WHERE handler = 'ItemStep'"), "no branch planned by the run that lost the job")
	require.Zero(t, env.count("SELECT COUNT(*) FROM "+env.table("for_each_plans")))
	require.Equal(t, 1, env.count("SELECT COUNT(*) FROM "+env.table("jobs")+" WHERE id = ? AND status = 'processing' AND reserved_by = 'other-worker'", job.ID),
		"the job stays with the worker that holds it")
}

// planCursor writes a cursor row for placeholder jobID of workflowID at
// step 0: the first four items have their branch jobs.
func (env *engineEnv) planCursor(jobID, workflowID int64) {
	env.T.Helper()
	_, err := env.DB.Exec("INSERT INTO "+env.table("for_each_plans")+" (job_id, workflow_id, step_index, next_item, total_items, updated_at) VALUES (?, ?, 0, 4, 10, UTC_TIMESTAMP())", jobID, workflowID)
	require.NoError(env.T, err)
}

// TestForEachPlanCursorGoesWithItsWorkflow (N4): a workflow that fails or
// is cancelled while its for_each plan is cut short (the placeholder
// handed back, its cursor written) drops the cursor in the same
// transaction that buries the placeholder: nothing would read it again,
// and a retried step must plan every item without a result, not resume
// past branches that were buried.
func TestForEachPlanCursorGoesWithItsWorkflow(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"fail", "cancel"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			env, id, job := pagedEnv(t)
			env.planCursor(job.ID, id)
			if end == "fail" {
				require.NoError(t, env.Engine.Fail(env.Ctx(), id, job.ID, "boom"))
			} else {
				require.NoError(t, env.Engine.Cancel(env.Ctx(), id))
			}
			require.NotEqual(t, "running", env.Workflow(id).Status)
			require.Zero(t, env.count("SELECT COUNT(*) FROM "+env.table("for_each_plans")), "the cursor went with the workflow")
		})
	}
}

// TestStaleSweepDropsOrphanForEachCursors (N4): the stale sweep deletes
// the cursors no plan will read again, left by workflows that ended
// without this engine (PHP failed or cancelled them, retention purged
// them) or moved past the step, and keeps the cursor of a plan under way.
func TestStaleSweepDropsOrphanForEachCursors(t *testing.T) {
	t.Parallel()
	env, live, job := pagedEnv(t)
	env.planCursor(job.ID, live)
	failed := env.Dispatch(workflow.New("failed-by-php").ForEach("items", "Item"), enginetest.Obj("items", []any{1}))
	moved := env.Dispatch(workflow.New("moved-on").ForEach("items", "Item").Then("SummaryStep"), enginetest.Obj("items", []any{1}))
	for _, id := range []int64{failed, moved} {
		ph := env.PendingOf(id)
		require.Len(t, ph, 1)
		env.planCursor(ph[0], id)
	}
	_, err := env.DB.Exec("UPDATE "+env.table("workflows")+" SET status = 'failed' WHERE id = ?", failed)
	require.NoError(t, err)
	_, err = env.DB.Exec("UPDATE "+env.table("workflows")+" SET current_step = 1 WHERE id = ?", moved)
	require.NoError(t, err)
	env.planCursor(999999, 999999) // a purged workflow

	_, _, err = env.Engine.RecoverStaleSteps(env.Ctx(), time.Now().Add(-time.Hour), 10, func(*store.JobRow) (bool, time.Duration) { return false, 0 })
	require.NoError(t, err)
	var left []int64
	require.NoError(t, env.DB.Select(&left, "SELECT workflow_id FROM "+env.table("for_each_plans")))
	require.Equal(t, []int64{live}, left, "only the plan under way keeps its cursor")
}

// TestForEachPlanTakenOverWithoutItsCursor (N4) pins what happens when a
// plan cut short (here: its third page's transaction failed, the
// placeholder handed back with items 0-3 planned and the cursor at 4) is
// taken over by a PHP worker. The plugin's handle_for_each_step does not
// read the cursor: it dispatches every item without a result or failure,
// as our placeholder does once the cursor is gone, so the items planned
// before the cut get a second branch job and run twice. The step still
// settles exactly: results are keyed by item index, so the aggregate
// counts each item once. While the Go run holds its lease no PHP worker
// can take the placeholder (PHP claims only pending jobs, and its stale
// sweep waits QUEUETY_STALE_TIMEOUT, 600 s by default, which the
// heartbeat and each page's renewal keep it from reaching);
// docs/compat.md says so.
func TestForEachPlanTakenOverWithoutItsCursor(t *testing.T) {
	t.Parallel()
	env, id, job := pagedEnv(t)
	_, err := env.DB.Exec("CREATE TRIGGER cut_plan BEFORE UPDATE ON " + env.table("for_each_plans") +
		" FOR EACH ROW IF NEW.next_item >= 6 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'cut'; END IF")
	require.NoError(t, err)
	_, _ = env.Engine.Run(env.Ctx(), job, enginetest.Decide)
	_, err = env.DB.Exec("DROP TRIGGER cut_plan")
	require.NoError(t, err)
	branches := "SELECT COUNT(*) FROM " + env.table("jobs") + " WHERE workflow_id = ? AND handler = 'ItemStep'"
	require.Equal(t, 4, env.count(branches, id), "two pages planned before the cut")
	require.Equal(t, 4, env.count("SELECT next_item FROM "+env.table("for_each_plans")+" WHERE job_id = ?", job.ID))

	// The takeover: the placeholder handed back and planned without the
	// cursor, as PHP plans it.
	_, err = env.DB.Exec("UPDATE "+env.table("jobs")+" SET status = 'pending', reserved_by = NULL, reserved_at = NULL, available_at = NOW() - INTERVAL 1 SECOND WHERE id = ?", job.ID)
	require.NoError(t, err)
	_, err = env.DB.Exec("DELETE FROM " + env.table("for_each_plans"))
	require.NoError(t, err)
	require.NoError(t, env.RunJob(job.ID))
	require.Equal(t, 14, env.count(branches, id), "items 0-3 planned a second time")
	require.Equal(t, 4, env.count("SELECT COUNT(*) FROM (SELECT 1 FROM "+env.table("jobs")+" WHERE workflow_id = ? AND handler = 'ItemStep' GROUP BY JSON_VALUE(payload, '$.__for_each.item_index') HAVING COUNT(*) = 2) AS twice", id))

	env.RunOf(id)
	require.Equal(t, "completed", env.Workflow(id).Status)
	state := env.Workflow(id).State
	require.Contains(t, state, `"total":10,"succeeded":10,"failed":0`, "each item counted once")
}
