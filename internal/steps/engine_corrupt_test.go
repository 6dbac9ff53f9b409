package steps_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Rows written by hand or by a broken tool: the engine must end them
// visibly instead of leaving them running for ever.

// editSteps replaces the workflow's _steps with steps, a JSON list whose
// "$0" stands for the stored first step.
func (env *engineEnv) editSteps(id int64, steps string) {
	env.T.Helper()
	st := env.State(id)
	first, ok := st.Step(0)
	require.True(env.T, ok)
	b, err := encodeValue(first.Value())
	require.NoError(env.T, err)
	v, err := phpjson.DecodeString(strings.ReplaceAll(steps, "$0", string(b)))
	require.NoError(env.T, err)
	st.Set(workflow.KeySteps, v)
	enc, err := st.Encode()
	require.NoError(env.T, err)
	env.SetState(id, string(enc))
}

func TestAdvanceToMissingStepFailsWorkflow(t *testing.T) {
	t.Parallel()
	for name, steps := range map[string]string{
		"steps shorter than total_steps": `[$0]`,
		"entries that are not steps":     `[$0, 1, null]`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := newEngineEnv(t)
			id := env.Dispatch(workflow.New("short").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
			env.editSteps(id, steps)
			env.RunNext(1)

			wf := env.Workflow(id)
			require.Equal(t, "failed", wf.Status, "a workflow at a missing step must not stay running")
			require.Equal(t, missingStepMessage(id, 1, 1, 3), wf.ErrorMessage.String)
			require.Equal(t, 1, wf.CurrentStep)
			require.Empty(t, env.PendingJobs())
			require.Contains(t, env.LogEvents(id), store.EventWorkflowFailed)
		})
	}
}

// corruptStates are stored states the engine cannot read.
var corruptStates = map[string]string{
	"not JSON":      `not json{`,
	"nested deeper": `{"_steps":[],"deep":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
}

func TestCorruptWorkflowIsListedNotFatal(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	good := env.Dispatch(workflow.New("good").Then("IncStep"), enginetest.Obj("n", 0))
	var bad []int64
	for range corruptStates {
		bad = append(bad, env.Dispatch(workflow.New("bad").Then("IncStep"), enginetest.Obj("n", 0)))
	}
	i := 0
	for _, st := range corruptStates {
		env.SetState(bad[i], st)
		i++
	}

	list, err := env.Engine.ListWorkflows(env.Ctx(), store.WorkflowFilter{})
	require.NoError(t, err, "one corrupt row must not fail the list")
	require.Len(t, list, 3)
	byID := map[int64]*workflow.StatusReport{}
	for _, r := range list {
		byID[r.WorkflowID] = r
	}
	require.Empty(t, byID[good].Corrupt)
	require.Equal(t, `{"n":0}`, mustJSON(t, byID[good].State))
	for _, id := range bad {
		r := byID[id]
		require.Equal(t, workflow.StatusRunning, r.Status, "the status as stored")
		require.Contains(t, r.Corrupt, "state is not valid JSON")
		require.True(t, r.State.IsNull())
	}
	r, err := env.Engine.WorkflowStatus(env.Ctx(), bad[0])
	require.NoError(t, err)
	require.NotEmpty(t, r.Corrupt)
}

func mustJSON(t *testing.T, v phpjson.Value) string {
	t.Helper()
	b, err := encodeValue(v)
	require.NoError(t, err)
	return string(b)
}

func TestCancelCorruptWorkflow(t *testing.T) {
	t.Parallel()
	for name, st := range corruptStates {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := newEngineEnv(t)
			var rec recorder
			rec.add(t, env.Engine.Handlers(), "UndoA", false)
			rec.add(t, env.Engine.Handlers(), "OnCancelled", false)
			id := env.Dispatch(workflow.New("c").Then("IncStep").CompensateWith("UndoA").Then("IncStep").OnCancel("OnCancelled"), enginetest.Obj("n", 0))
			env.RunNext(1)
			env.SetState(id, st)

			require.NoError(t, env.Engine.Cancel(env.Ctx(), id))
			wf := env.Workflow(id)
			require.Equal(t, "cancelled", wf.Status)
			require.Equal(t, st, wf.State, "the unreadable bytes are kept")
			require.Empty(t, rec.ran, "nothing readable to compensate")
			for _, j := range env.Jobs(id)[1:] {
				require.Equal(t, store.StatusBuried, j.Status)
				require.Equal(t, "Workflow cancelled", j.ErrorMessage.String)
			}
			logs := env.logRows(id)
			cancelled, debug := logs[len(logs)-2], logs[len(logs)-1]
			require.Equal(t, "workflow_cancelled", cancelled.Event)
			require.Equal(t, "default", cancelled.Queue)
			require.Equal(t, store.LogDebug, debug.Event)
			require.Contains(t, debug.ErrorMessage.String, "without compensation")
			require.Equal(t, `{"type":"cancel_state_unreadable"}`, debug.Context.String)
		})
	}
}

func TestBuriedStepOfCorruptWorkflowFailsIt(t *testing.T) {
	t.Parallel()
	for name, st := range corruptStates {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := newEngineEnv(t)
			ran := 0
			env.step("CountingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
				ran++
				return enginetest.Obj("n", 1), nil
			})
			id := env.Dispatch(workflow.New("c").Then("CountingStep").Then("CountingStep"), enginetest.Obj("n", 0))
			env.SetState(id, st)
			job := env.PendingJobs()[0]
			require.ErrorIs(t, env.RunJob(job), workflow.ErrCorruptState)
			require.Zero(t, ran, "the handler is not run on a state it cannot be given")
			require.Equal(t, 1, env.Jobs(id)[0].Attempts, "buried at once: a corrupt state does not heal")
			wf := env.Workflow(id)
			require.Equal(t, "failed", wf.Status, "not running for ever")
			require.Contains(t, wf.ErrorMessage.String, "state is not valid JSON")
			require.Equal(t, st, wf.State)
			require.Equal(t, store.StatusBuried, env.Jobs(id)[0].Status)
			require.Contains(t, env.LogEvents(id), store.EventWorkflowFailed)
		})
	}
}

func TestStuckWorkflows(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	three := func() int64 {
		return env.Dispatch(workflow.New("w").Then("IncStep").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
	}
	fine := three()
	short := three()
	env.editSteps(short, `[$0]`)
	holes := three()
	env.editSteps(holes, `[$0, 1, null]`)
	atHole := three()
	env.editSteps(atHole, `[$0, 1, null]`)
	_, err := env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET current_step = 1 WHERE id = ?", atHole)
	require.NoError(t, err)
	corrupt := three()
	env.SetState(corrupt, corruptStates["not JSON"])
	tooDeep := three()
	env.SetState(tooDeep, corruptStates["nested deeper"])
	deepButFine := three()
	st := env.State(deepButFine)
	deep, err := phpjson.DecodeString(strings.Repeat("[", 40) + strings.Repeat("]", 40))
	require.NoError(t, err)
	st.Set("deep", deep)
	enc, err := st.Encode()
	require.NoError(t, err)
	env.SetState(deepButFine, string(enc))

	got, err := env.Engine.StuckWorkflows(env.Ctx(), store.StuckScan{})
	require.NoError(t, err)
	kinds := map[int64]string{}
	for _, s := range got {
		kinds[s.ID] = s.Kind
		require.NotEmpty(t, s.Reason)
	}
	require.Equal(t, map[int64]string{
		short: workflow.StuckStepsShort, holes: workflow.StuckStepsShort, atHole: workflow.StuckCurrentStepMissing,
		corrupt: workflow.StuckStateCorrupt, tooDeep: workflow.StuckStateCorrupt,
	}, kinds)
	require.NotContains(t, kinds, fine)
	require.NotContains(t, kinds, deepButFine, "deeper than the server reads, not than PHP does")
}
