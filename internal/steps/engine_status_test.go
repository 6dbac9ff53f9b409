package steps_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// The plugin's rows after Queuety::cancel_workflow on a workflow parked on
// a signal wait with one compensation on its stack
// (fixtures/queuety-plugin/wf_cancel_compensation.json): the engine's
// Cancel writes the same rows.
func TestReplayCancelCompensation(t *testing.T) {
	t.Parallel()
	snaps := loadReplay(t, "wf_cancel_compensation.json")
	require.Len(t, snaps, 3)
	require.Equal(t, "after cancel_workflow", snaps[2].After)
	env := newEngineEnv(t)
	var rec recorder
	rec.add(t, env.Engine.Handlers(), "ReleaseLocks", false)
	env.load(snaps[1])
	require.NoError(t, env.Engine.Cancel(env.Ctx(), 1))
	env.compare("after cancel_workflow", snaps[2])
	require.Equal(t, []string{`ReleaseLocks {"n":1}`}, rec.ran)
}

func statusJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestWorkflowStatusReport(t *testing.T) {
	t.Parallel()

	t.Run("running, completed, failed", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		id := env.Dispatch(workflow.New("st").Version("v2").IdempotencyKey("k-1").MaxTransitions(10).
			Then("IncStep", workflow.Named("first")).Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0, "_secret", 1))
		env.RunNext(1)
		r, err := env.Engine.WorkflowStatus(env.Ctx(), id)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusRunning, r.Status)
		require.Equal(t, 1, r.CurrentStep)
		require.Equal(t, 3, r.TotalSteps)
		require.Equal(t, "1", *r.CurrentStepName)
		require.Equal(t, "single", *r.CurrentStepType)
		require.Equal(t, `{"n":1}`, statusJSON(t, r.State))
		require.Equal(t, "v2", *r.DefinitionVersion)
		require.Equal(t, "k-1", *r.IdempotencyKey)
		require.NotNil(t, r.DefinitionHash)
		require.Equal(t, `{"max_transitions":10,"transitions":1,"cost_units":1,"started_workflows":0,"public_state_bytes":7}`, statusJSON(t, r.Budget))
		require.Nil(t, r.WaitType)
		require.True(t, r.WaitDetails.IsNull())
		require.Equal(t, 0, *r.ArtifactCount)
		require.Nil(t, r.CompletedAt)
		require.NotEmpty(t, r.StartedAt)

		env.Drain(5)
		r, err = env.Engine.WorkflowStatus(env.Ctx(), id)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusCompleted, r.Status)
		require.Equal(t, 3, r.CurrentStep)
		require.Nil(t, r.CurrentStepName, "past the end")
		require.NotNil(t, r.CompletedAt)

		f := env.Dispatch(workflow.New("f").Then("FailingStep").WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		env.Drain(3)
		r, err = env.Engine.WorkflowStatus(env.Ctx(), f)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusFailed, r.Status)
		require.Equal(t, "step failed on purpose", *r.ErrorMessage)
		require.NotNil(t, r.FailedAt)
		require.Equal(t, "0", *r.CurrentStepName)

		list, err := env.Engine.ListWorkflows(env.Ctx(), store.WorkflowFilter{})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, f, list[0].WorkflowID, "newest first")
		list, err = env.Engine.ListWorkflows(env.Ctx(), store.WorkflowFilter{Status: "completed"})
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, id, list[0].WorkflowID)
		list, err = env.Engine.ListWorkflows(env.Ctx(), store.WorkflowFilter{Name: "f", Status: "failed", Limit: 5})
		require.NoError(t, err)
		require.Len(t, list, 1)

		_, err = env.Engine.WorkflowStatus(env.Ctx(), 987654)
		require.ErrorIs(t, err, store.ErrWorkflowNotFound)
	})

	t.Run("waiting for a signal", func(t *testing.T) {
		t.Parallel()
		snaps := loadReplay(t, "wf_cancel_compensation.json")
		env := newEngineEnv(t)
		env.load(snaps[1])
		r, err := env.Engine.WorkflowStatus(env.Ctx(), 1)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusWaitingForSignal, r.Status)
		require.Equal(t, "signal", *r.WaitType)
		require.Equal(t, []string{"go"}, r.WaitingFor)
		require.Equal(t, "all", *r.WaitMode)
		require.Equal(t, "wait_for_go", *r.CurrentStepName)
		require.Equal(t, `{"step_name":"wait_for_go","match_payload":[],"matched":[],"remaining":["go"],"wait_mode":"all"}`, statusJSON(t, r.WaitDetails))
		_, err = env.DB.Exec("INSERT INTO `" + env.Store.Tables()["signals"] + "` (workflow_id, signal_name, payload) VALUES (1, 'go', '{\"ok\":true}'), (1, 'other', '[]')")
		require.NoError(t, err)
		r, err = env.Engine.WorkflowStatus(env.Ctx(), 1)
		require.NoError(t, err)
		require.Equal(t, `{"step_name":"wait_for_go","match_payload":[],"matched":["go"],"remaining":[],"wait_mode":"all"}`, statusJSON(t, r.WaitDetails))

		list, err := env.Engine.ListWorkflows(env.Ctx(), store.WorkflowFilter{})
		require.NoError(t, err)
		require.True(t, list[0].WaitDetails.IsNull(), "lists leave wait details out")
		require.Equal(t, []string{"go"}, list[0].WaitingFor)
	})

	t.Run("waiting for workflows", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a := env.Dispatch(workflow.New("a").Then("IncStep"), enginetest.Obj("n", 0))
		b := env.Dispatch(workflow.New("b").Then("FailingStep").WithHandlerMetadata(env.Engine.Handlers()), enginetest.Obj("n", 0))
		c := env.Dispatch(workflow.New("c").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0))
		env.RunJob(env.Jobs(a)[0].ID)
		env.RunJob(env.Jobs(b)[0].ID)
		w := env.Dispatch(workflow.New("w").WaitForWorkflows(workflow.WorkflowIDs(a, b, c), workflow.WaitQuorum, workflow.Quorum(2), workflow.ResultKey("deps")), enginetest.Obj())
		// Park it as the placeholder does.
		st := env.State(w)
		wait := phpjson.NewObject().Set("type", phpjson.String("workflow")).Set("step_index", phpjson.Int(0)).
			Set("wait_mode", phpjson.String("quorum")).Set("result_key", phpjson.String("deps")).
			Set("waiting_for", phpjson.Strings([]string{itoa(int(a)), itoa(int(b)), itoa(int(c))}))
		st.Set(workflow.KeyWait, phpjson.ObjectValue(wait))
		enc, err := st.Encode()
		require.NoError(t, err)
		_, err = env.DB.Exec("UPDATE `"+env.Store.Tables()["workflows"]+"` SET status = 'waiting_for_workflows', state = ? WHERE id = ?", string(enc), w)
		require.NoError(t, err)

		r, err := env.Engine.WorkflowStatus(env.Ctx(), w)
		require.NoError(t, err)
		require.Equal(t, workflow.StatusWaitingForWorkflows, r.Status)
		require.Equal(t, "workflow", *r.WaitType)
		require.Equal(t, "quorum", *r.WaitMode)
		require.Equal(t, `{"step_name":"wait_for_workflows_0","result_key":"deps","quorum":2,"matched":["`+itoa(int(a))+`"],"remaining":["`+itoa(int(c))+`"],"failed":["`+itoa(int(b))+`"],"wait_mode":"quorum"}`,
			statusJSON(t, r.WaitDetails))
	})
}

func TestWorkflowTimelineExportArtifacts(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("exp").Then("IncStep").Then("IncStep"), enginetest.Obj("n", 0, "url", "a/b"))
	env.Drain(5)

	tl, err := env.Engine.Timeline(env.Ctx(), id, 0, 0)
	require.NoError(t, err)
	require.Len(t, tl, 4)
	require.Equal(t, "step_started", tl[0].Event)
	require.Equal(t, "step_completed", tl[3].Event)
	require.Equal(t, `{"n":2,"url":"a\/b"}`, statusJSON(t, tl[3].StateAfter))
	require.True(t, tl[0].StateAfter.IsNull())
	page, err := env.Engine.Timeline(env.Ctx(), id, tl[1].ID, 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, tl[2].ID, page[0].ID)
	_, err = env.Engine.Timeline(env.Ctx(), 987654, 0, 0)
	require.ErrorIs(t, err, store.ErrWorkflowNotFound)

	require.NoError(t, env.Engine.PutArtifact(env.Ctx(), id, " report ", phpjson.ObjectValue(enginetest.Obj("path", "x/y", "n", 1)), "json", 1, enginetest.Obj("source", "test")))
	require.NoError(t, env.Engine.PutArtifact(env.Ctx(), id, "notes", phpjson.String("plain/text"), "text", -1, nil))
	require.NoError(t, env.Engine.PutArtifact(env.Ctx(), id, "notes", phpjson.String("replaced"), "text", -1, nil))
	var content string
	require.NoError(t, env.DB.Get(&content, "SELECT content FROM `"+env.Store.Tables()["artifacts"]+"` WHERE artifact_key = 'report'"))
	require.Equal(t, `{"path":"x/y","n":1}`, content, "JSON_UNESCAPED_SLASHES")
	a, err := env.Engine.GetArtifact(env.Ctx(), id, "report")
	require.NoError(t, err)
	require.Equal(t, `{"path":"x\/y","n":1}`, statusJSON(t, a.Content))
	require.Equal(t, int64(1), *a.StepIndex)
	a, err = env.Engine.GetArtifact(env.Ctx(), id, "notes")
	require.NoError(t, err)
	require.Equal(t, `"replaced"`, statusJSON(t, a.Content))
	require.Nil(t, a.StepIndex)
	r, err := env.Engine.WorkflowStatus(env.Ctx(), id)
	require.NoError(t, err)
	require.Equal(t, 2, *r.ArtifactCount)
	require.Equal(t, []string{"notes", "report"}, r.ArtifactKeys)
	require.Error(t, env.Engine.PutArtifact(env.Ctx(), id, " ", phpjson.Null(), "json", -1, nil))

	doc, err := env.Engine.Export(env.Ctx(), id)
	require.NoError(t, err)
	require.Equal(t, []string{"workflow", "jobs", "events", "logs", "signals", "artifacts", "chunks", "wait_dependencies", "exported_at", "queuety_version"}, doc.Keys())
	wfv, _ := doc.Get("workflow")
	wf, _ := wfv.AsObject()
	require.Equal(t, []string{"id", "name", "status", "state", "current_step", "total_steps", "parent_workflow_id", "parent_step_index",
		"started_at", "completed_at", "failed_at", "error_message", "deadline_at", "definition_version", "definition_hash", "idempotency_key"}, wf.Keys())
	st, _ := wf.Get("status")
	require.Equal(t, `"completed"`, statusJSON(t, st))
	cur, _ := wf.Get("current_step")
	require.Equal(t, "2", statusJSON(t, cur))
	jobs, _ := doc.Get("jobs")
	jl, _ := jobs.AsList()
	require.Len(t, jl, 2)
	j0, _ := jl[0].AsObject()
	payload, _ := j0.Get("payload")
	require.Equal(t, `{"__queuety_runtime":{"max_attempts":3}}`, statusJSON(t, payload))
	evs, _ := doc.Get("events")
	el, _ := evs.AsList()
	require.Len(t, el, 4)
	logs, _ := doc.Get("logs")
	ll, _ := logs.AsList()
	require.Len(t, ll, 6)
	arts, _ := doc.Get("artifacts")
	al, _ := arts.AsList()
	require.Len(t, al, 2)
	a0, _ := al[0].AsObject()
	k, _ := a0.Get("key")
	require.Equal(t, `"notes"`, statusJSON(t, k))

	pretty, err := workflow.ExportJSON(doc)
	require.NoError(t, err)
	require.Contains(t, string(pretty), "\n    \"workflow\": {\n")
	require.Contains(t, string(pretty), `"url": "a/b"`)

	require.NoError(t, env.Engine.DeleteArtifact(env.Ctx(), id, "notes"))
	_, err = env.Engine.GetArtifact(env.Ctx(), id, "notes")
	require.ErrorIs(t, err, store.ErrArtifactNotFound)
	_, err = env.Engine.Export(env.Ctx(), 987654)
	require.ErrorIs(t, err, store.ErrWorkflowNotFound)
}
