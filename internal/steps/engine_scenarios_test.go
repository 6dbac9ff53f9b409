package steps_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Scenarios of Queuety's integration tests (spec §12) the engine covers.

func (env *engineEnv) step(name string, fn workflow.StepFunc) {
	require.NoError(env.T, env.Engine.Handlers().Step(name, fn, workflow.HandlerMetadata{}))
}

func constStep(kv ...any) workflow.StepFunc {
	return func(context.Context, *workflow.State) (*phpjson.Object, error) { return enginetest.Obj(kv...), nil }
}

// WorkflowTest: three steps accumulate; "_" output keys are not merged;
// each step's completion enqueues the next; the last completes the
// workflow; log rows are Queuety's.
func TestEngineWorkflowLifecycle(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.step("Secret", constStep("visible", 1, "_hidden", 2, "_queuety_trace", map[string]any{"x": 1}))
	id := env.Dispatch(workflow.New("life").Then("IncStep").Then("Secret").Then("IncStep"), enginetest.Obj("n", 0))

	jobs := env.Jobs(id)
	require.Len(t, jobs, 1)
	require.NoError(t, env.RunJob(jobs[0].ID))
	jobs = env.Jobs(id)
	require.Len(t, jobs, 2)
	require.Equal(t, store.StatusCompleted, jobs[0].Status)
	require.Equal(t, int64(1), jobs[1].StepIndex.Int64)
	require.Equal(t, 1, env.Workflow(id).CurrentStep)

	env.Drain(5)
	wf := env.Workflow(id)
	require.Equal(t, "completed", wf.Status)
	require.Equal(t, 3, wf.CurrentStep)
	require.True(t, wf.CompletedAt.Valid)
	require.Equal(t, `{"n":2,"visible":1}`, env.PublicJSON(id))
	_, hidden := env.State(id).Get("_hidden")
	require.False(t, hidden)
	require.Equal(t, []string{"workflow_started", "started", "completed", "started", "completed", "started", "completed", "workflow_completed"}, env.LogEvents(id))
	require.Equal(t, []string{"step_started", "step_completed", "step_started", "step_completed", "step_started", "step_completed"}, env.WorkflowEvents(id))
}

// ConditionalWorkflowTest: _next_step jumps to a named step (forward or
// back); an unknown target fails the attempt like a handler error.
func TestEngineConditionalNextStep(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.step("Jump", constStep("jumped", true, "_next_step", "finish"))
	id := env.Dispatch(workflow.New("cond").Then("Jump").Then("IncStep", workflow.Named("skipped")).Then("IncStep", workflow.Named("finish")), enginetest.Obj("n", 0))
	env.Drain(5)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":1,"jumped":true}`, env.PublicJSON(id))
	var out string
	require.NoError(t, env.DB.Get(&out, "SELECT output FROM `"+env.Store.Tables()["workflow_events"]+"` WHERE workflow_id = ? AND event = 'step_completed' ORDER BY id LIMIT 1", id))
	require.Equal(t, `{"jumped":true,"_next_step":"finish"}`, out, "step_completed output keeps _next_step")

	env.step("Lost", constStep("_next_step", "nowhere"))
	bad := env.Dispatch(workflow.New("cond-bad").Then("Lost").Then("IncStep").MaxAttempts(2), enginetest.Obj())
	env.Drain(5)
	wf := env.Workflow(bad)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Workflow "+itoa(int(bad))+": _next_step target 'nowhere' not found.", wf.ErrorMessage.String)
	jobs := env.Jobs(bad)
	require.Len(t, jobs, 1)
	require.Equal(t, store.StatusBuried, jobs[0].Status)
	require.Equal(t, 2, jobs[0].Attempts)
	require.Equal(t, []string{"workflow_started", "started", "failed", "retried", "started", "buried", "workflow_failed"}, env.LogEvents(bad))
	require.Equal(t, 0, env.Workflow(bad).CurrentStep)
}

// ParallelStepsTest: one job per branch at the same step; the step stays
// until every branch completed; outputs merge over the initial state.
func TestEngineParallel(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("par").Then("IncStep").Parallel("BranchA", "BranchB").Then("IncStep"), enginetest.Obj("n", 0, "keep", "me"))
	env.RunNext(1)
	jobs := env.Jobs(id)
	require.Len(t, jobs, 3)
	require.Equal(t, []string{"BranchA", "BranchB"}, []string{jobs[1].Handler, jobs[2].Handler})
	require.Equal(t, jobs[1].StepIndex, jobs[2].StepIndex)
	require.NoError(t, env.RunJob(jobs[2].ID))
	require.Equal(t, 1, env.Workflow(id).CurrentStep, "waits for the other branch")
	require.Len(t, env.Jobs(id), 3)
	require.NoError(t, env.RunJob(jobs[1].ID))
	require.Equal(t, 2, env.Workflow(id).CurrentStep)
	env.Drain(5)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `{"n":2,"keep":"me","b":2.5,"shared":"A","a":"from A"}`, env.PublicJSON(id))
	require.Equal(t, []string{"step_started", "step_completed", "step_started", "step_branch_completed",
		"step_started", "step_branch_completed", "step_completed", "step_started", "step_completed"}, env.WorkflowEvents(id))
}

// ForEachWorkflowTest: all / first_success / quorum completion rules,
// reducer output, impossible quorum failing the workflow, empty items.
func TestEngineForEach(t *testing.T) {
	t.Parallel()
	items := func(v ...any) *phpjson.Object { return enginetest.Obj("items", v) }

	t.Run("all collects results and the next step runs", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep").Then("IncStep"), items("a", "bb"))
		env.Drain(10)
		require.Equal(t, "completed", env.Workflow(id).Status)
		agg, _ := env.State(id).Get("0_results")
		b, err := phpjson.Encode(agg)
		require.NoError(t, err)
		require.Equal(t, `{"mode":"all","quorum":null,"total":2,"succeeded":2,"failed":0,"settled":true,`+
			`"winner":{"index":0,"item":"a","output":{"len":1,"item":"a"},"job_id":2},`+
			`"results":[{"index":0,"item":"a","output":{"len":1,"item":"a"},"job_id":2},{"index":1,"item":"bb","output":{"len":2,"item":"bb"},"job_id":3}],"failures":[]}`, string(b))
	})

	t.Run("all fails on the first branch failure and buries the rest", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep").Then("IncStep"), items("ü", "a"))
		env.RunNext(1) // the placeholder
		jobs := env.Jobs(id)
		require.Len(t, jobs, 3)
		require.Error(t, env.RunJob(jobs[1].ID))
		wf := env.Workflow(id)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, "cannot handle ü", wf.ErrorMessage.String)
		jobs = env.Jobs(id)
		require.Equal(t, store.StatusBuried, jobs[1].Status)
		require.Equal(t, "cannot handle ü", jobs[1].ErrorMessage.String)
		require.Equal(t, store.StatusBuried, jobs[2].Status, "other active jobs buried with the branch's message")
		require.Equal(t, "cannot handle ü", jobs[2].ErrorMessage.String)
		rt, ok := env.State(id).ForEachRuntime(0)
		require.True(t, ok)
		require.Len(t, rt.Failures, 1)
	})

	t.Run("first_success settles early and ignores late failures", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep", workflow.ForEachFirstSuccess).Then("IncStep"), items("ü", "a", "b"))
		env.RunNext(1)
		jobs := env.Jobs(id)
		require.Error(t, env.RunJob(jobs[1].ID)) // ü fails: not impossible yet
		require.Equal(t, "running", env.Workflow(id).Status)
		require.NoError(t, env.RunJob(jobs[2].ID))
		jobs = env.Jobs(id)
		require.Equal(t, store.StatusBuried, jobs[3].Status)
		require.Equal(t, "For-each completion settled early.", jobs[3].ErrorMessage.String)
		env.Drain(5)
		require.Equal(t, "completed", env.Workflow(id).Status)
		rt, _ := env.State(id).ForEachRuntime(0)
		require.True(t, rt.Settled)
		require.Equal(t, int64(1), rt.WinnerIndex)
	})

	t.Run("impossible quorum fails the workflow", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep", workflow.ForEachQuorum, workflow.Quorum(2)).Then("IncStep"), items("ü", "a"))
		env.RunNext(1)
		jobs := env.Jobs(id)
		require.Error(t, env.RunJob(jobs[1].ID))
		require.Equal(t, "failed", env.Workflow(id).Status)
	})

	t.Run("empty items settle at once", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep").Then("IncStep"), enginetest.Obj("items", []any{}, "n", 0))
		env.Drain(3)
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, []string{"workflow_started", "started", "completed", "started", "completed", "workflow_completed"}, env.LogEvents(id))
	})

	t.Run("items that are not a list fail the placeholder", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("fe").ForEach("items", "ItemStep").MaxAttempts(1), enginetest.Obj("items", "nope"))
		env.Drain(3)
		wf := env.Workflow(id)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, "For-each step '0' expected state key 'items' to contain an array.", wf.ErrorMessage.String)
	})
}

// RepeatWorkflowTest: back-edges until the condition holds; max_iterations
// fails the workflow; a condition handler decides when set.
func TestEngineRepeat(t *testing.T) {
	t.Parallel()
	t.Run("until", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("loop").Then("IncStep", workflow.Named("inc")).RepeatUntil("inc", workflow.StateKey("n"), workflow.Expected(3)).Then("BranchA"), enginetest.Obj("n", 0))
		env.Drain(20)
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, `{"n":3,"a":"from A","shared":"A"}`, env.PublicJSON(id))
		v, _ := env.State(id).Get(workflow.KeyRepeatSteps)
		b, _ := phpjson.Encode(v)
		require.Equal(t, `{"1":{"iterations":2}}`, string(b))
	})
	t.Run("while with a condition", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		require.NoError(t, env.Engine.Handlers().Condition("Below", func(_ context.Context, s *phpjson.Object, payload *phpjson.Object) (bool, error) {
			n, _ := s.Get("n")
			return enginetest.IntOf(n) < 2, nil
		}))
		id := env.Dispatch(workflow.New("loop").Then("IncStep", workflow.Named("inc")).RepeatWhile("inc", workflow.Condition("Below")), enginetest.Obj("n", 0))
		env.Drain(20)
		require.Equal(t, "completed", env.Workflow(id).Status)
		require.Equal(t, `{"n":2}`, env.PublicJSON(id))
	})
	t.Run("max_iterations fails the workflow", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("loop").Then("IncStep", workflow.Named("inc")).RepeatUntil("inc", workflow.StateKey("never"), workflow.MaxIterations(2)), enginetest.Obj("n", 0))
		env.Drain(20)
		wf := env.Workflow(id)
		require.Equal(t, "failed", wf.Status)
		require.Equal(t, "Workflow "+itoa(int(id))+": repeat step 'repeat_until_1' exceeded max_iterations of 2.", wf.ErrorMessage.String)
		require.Equal(t, `{"n":3}`, env.PublicJSON(id))
	})
}

// DurableDelayTest: the placeholder is available after the delay; it
// advances with an empty output and two `completed` rows.
func TestEngineDurableDelay(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("wait").Then("IncStep").Delay(60*time.Second).Then("IncStep"), enginetest.Obj("n", 0))
	env.RunNext(1)
	jobs := env.Jobs(id)
	require.Len(t, jobs, 2)
	require.Equal(t, workflow.HandlerDelay, jobs[1].Handler)
	require.InDelta(t, 60, time.Until(jobs[1].AvailableAt).Seconds(), 3)
	require.NoError(t, env.RunJob(jobs[1].ID))
	env.Drain(2)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, []string{"workflow_started", "started", "completed", "started", "completed", "completed", "started", "completed", "workflow_completed"}, env.LogEvents(id))
}

// WorkflowGuardrailsTest: budgets fail the workflow without retries.
func TestEngineBudgets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		b    func() *workflow.Builder
		init *phpjson.Object
		msg  string
	}{
		{"max_transitions", func() *workflow.Builder {
			return workflow.New("b").Then("IncStep", workflow.Named("inc")).RepeatUntil("inc", workflow.StateKey("never")).MaxTransitions(3)
		}, enginetest.Obj("n", 0), "Workflow exceeded max_transitions budget of 3."},
		{"max_state_bytes", func() *workflow.Builder { return workflow.New("b").Then("PlanItems").MaxStateBytes(10) }, enginetest.Obj(), "Workflow exceeded max_state_bytes budget of 10."},
		{"max_cost_units", func() *workflow.Builder { return workflow.New("b").Then("IncStep").Then("IncStep").MaxCostUnits(1) }, enginetest.Obj("n", 0), "Workflow exceeded max_cost_units budget of 1."},
		{"max_for_each_items", func() *workflow.Builder {
			return workflow.New("b").Then("PlanItems").ForEach("items", "ItemStep").MaxForEachItems(2)
		}, enginetest.Obj(), "For-each step '1' planned 3 items, exceeding max_for_each_items budget of 2."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEngineEnv(t)
			id := env.Dispatch(tc.b(), tc.init)
			env.Drain(20)
			wf := env.Workflow(id)
			require.Equal(t, "failed", wf.Status)
			require.Equal(t, tc.msg, wf.ErrorMessage.String)
			jobs := env.Jobs(id)
			last := jobs[len(jobs)-1]
			require.Equal(t, store.StatusBuried, last.Status)
			require.Equal(t, 1, last.Attempts, "no retry on a constraint violation")
		})
	}
	t.Run("counters", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("b").Then("IncStep").Parallel("BranchA", "BranchB").MaxTransitions(10), enginetest.Obj("n", 0))
		env.Drain(5)
		require.Equal(t, "completed", env.Workflow(id).Status)
		v, _ := env.State(id).Get(workflow.KeyWorkflowCounters)
		b, _ := phpjson.Encode(v)
		require.Equal(t, `{"transitions":2,"cost_units":3,"started_workflows":0}`, string(b))
	})
}

// WorkflowCompensationTest (the part the engine covers): a settled step
// with a compensation pushes its handler and the public state after it.
func TestEngineCompensationSnapshot(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("comp").Then("IncStep").CompensateWith("Undo").Then("IncStep").Parallel("BranchA").CompensateWith("UndoBranch"), enginetest.Obj("n", 0))
	env.Drain(5)
	v, _ := env.State(id).Get(workflow.KeyCompensationStack)
	b, _ := phpjson.Encode(v)
	require.Equal(t, `[{"step_index":0,"handler":"Undo","payload":[],"state":{"n":1}},`+
		`{"step_index":2,"handler":"UndoBranch","payload":[],"state":{"n":2,"a":"from A","shared":"A"}}]`, string(b))
}

// Idempotency keys: the second dispatch returns the first workflow.
func TestEngineDispatchIdempotency(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	d, err := workflow.New("idem").Then("IncStep").IdempotencyKey("order-42").Build(enginetest.Obj("n", 0))
	require.NoError(t, err)
	id1, existing, err := env.Engine.Dispatch(env.Ctx(), d)
	require.NoError(t, err)
	require.False(t, existing)
	id2, existing, err := env.Engine.Dispatch(env.Ctx(), d)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, id1, id2)
	var n int
	require.NoError(t, env.DB.Get(&n, "SELECT COUNT(*) FROM `"+env.Store.Tables()["workflow_dispatch_keys"]+"`"))
	require.Equal(t, 1, n)
	require.Len(t, env.Jobs(id1), 1)
}

// StatePruningTest: outputs of steps older than the window are removed.
func TestEnginePruning(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.step("S0", constStep("a", 1))
	env.step("S1", constStep("b", 2))
	env.step("S2", constStep("c", 3))
	id := env.Dispatch(workflow.New("prune").Then("S0").Then("S1").Then("S2").PruneStateAfter(1), enginetest.Obj("keep", true))
	env.Drain(5)
	require.Equal(t, `{"keep":true,"c":3}`, env.PublicJSON(id))
	v, _ := env.State(id).Get(workflow.KeyStepOutputs)
	b, _ := phpjson.Encode(v)
	require.Equal(t, `{"2":["c"]}`, string(b))
}

// WorkflowCompensationTest: with compensate_on_failure, a failure runs the
// stack in reverse on the snapshots; a failing compensation is logged as
// `debug` and ignored; without the opt-in nothing runs.
func TestEngineCompensateOnFailure(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	var ran []string
	require.NoError(t, env.Engine.Handlers().Compensation("Undo", func(_ context.Context, s *phpjson.Object, _ *phpjson.Object) error {
		b, _ := encodeObject(s)
		ran = append(ran, "Undo "+string(b))
		return nil
	}))
	require.NoError(t, env.Engine.Handlers().Compensation("Broken", func(context.Context, *phpjson.Object, *phpjson.Object) error {
		ran = append(ran, "Broken")
		return enginetest.Thrown("cannot undo")
	}))
	id := env.Dispatch(workflow.New("comp").Then("IncStep").CompensateWith("Undo").Then("IncStep").CompensateWith("Broken").
		Then("FailingStep").CompensateOnFailure().WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
	env.Drain(5)
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Equal(t, []string{"Broken", `Undo {"n":1}`}, ran)
	st := env.State(id)
	cause, done := st.Compensated()
	require.True(t, done)
	require.Equal(t, "failure", cause)
	require.Equal(t, []string{"workflow_started", "started", "completed", "started", "completed", "started", "buried", "workflow_failed", "debug"}, env.LogEvents(id))
	var ctxCol string
	require.NoError(t, env.DB.Get(&ctxCol, "SELECT context FROM `"+env.Store.Tables()["logs"]+"` WHERE event = 'debug'"))
	require.Equal(t, `{"type":"compensation_failed","reason":"failure"}`, ctxCol)

	ran = nil
	id = env.Dispatch(workflow.New("nocomp").Then("IncStep").CompensateWith("Undo").Then("FailingStep").WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
	env.Drain(5)
	require.Equal(t, "failed", env.Workflow(id).Status)
	require.Empty(t, ran)
	_, done = env.State(id).Compensated()
	require.False(t, done)
}
