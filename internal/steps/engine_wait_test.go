package steps_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/engine/enginetest"
	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// Workflow-dependency waits: Queuety's WaitForWorkflowsTest and
// StartWorkflowsTest (spec §12) and seed 003's examples, on the Go builder.

// seed 003: the editorial workflow waits for the research workflow; while
// it waits it holds no job (no worker); the research completing resumes
// it with the research's public state, unwrapped under the result key.
func TestEngineWaitForWorkflowEditorial(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.step("Publish", constStep("published", true))
	research := env.Research("market")
	editorial := env.Dispatch(workflow.New("editorial").WaitForWorkflow(workflow.WorkflowIDs(research), workflow.ResultKey("dependency")).Then("Publish"), enginetest.Obj("topic", "x"))

	env.RunOf(editorial)
	wf := env.Workflow(editorial)
	require.Equal(t, "waiting_for_workflows", wf.Status)
	require.Equal(t, 0, wf.CurrentStep)
	require.Empty(t, env.PendingOf(editorial), "a waiting workflow holds no job")
	require.Equal(t, fmt.Sprintf(`{"type":"workflow","step_index":0,"wait_mode":"all","result_key":"dependency","waiting_for":["%d"],"step_name":"wait_for_workflow"}`, research), env.WaitJSON(editorial))
	require.Equal(t, []int64{research}, env.Deps(editorial))
	require.Equal(t, []string{"step_started", "workflow_waiting"}, env.WorkflowEvents(editorial))

	env.RunOf(research)
	wf = env.Workflow(editorial)
	require.Equal(t, "running", wf.Status)
	require.Equal(t, 1, wf.CurrentStep)
	require.Equal(t, `{"topic":"x","dependency":{"label":"market","summary":"done market"}}`, env.PublicJSON(editorial))
	require.Empty(t, env.WaitJSON(editorial))
	require.Empty(t, env.Deps(editorial), "dependency rows go once the wait settles")
	env.RunOf(editorial)
	require.Equal(t, "completed", env.Workflow(editorial).Status)
	require.Equal(t, []string{"step_started", "workflow_waiting", "workflow_resumed", "step_started", "step_completed"}, env.WorkflowEvents(editorial))
}

// seed 003: synthesis waits for three research workflows with All, Any and
// Quorum 2.
func TestEngineWaitForWorkflowsModes(t *testing.T) {
	t.Parallel()
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, b, c := env.Research("a"), env.Research("b"), env.Research("c")
		w := env.Dispatch(workflow.New("synthesis").WaitForWorkflows(workflow.WorkflowIDs(a, b, c), workflow.ResultKey("research")), nil)
		env.RunOf(w)
		env.RunOf(a)
		env.RunOf(b)
		require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)
		var satisfied int
		require.NoError(t, env.DB.Get(&satisfied, "SELECT COUNT(*) FROM `"+env.Store.Tables()["workflow_dependencies"]+"` WHERE waiting_workflow_id = ? AND satisfied_at IS NOT NULL", w))
		require.Equal(t, 2, satisfied, "satisfied_at marks the completed dependencies while the wait is pending")
		env.RunOf(c)
		require.Equal(t, "completed", env.Workflow(w).Status)
		require.Equal(t, fmt.Sprintf(`{"research":{"%d":{"label":"a","summary":"done a"},"%d":{"label":"b","summary":"done b"},"%d":{"label":"c","summary":"done c"}}}`, a, b, c), env.PublicJSON(w))
	})
	t.Run("any", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, b, c := env.Research("a"), env.Research("b"), env.Research("c")
		w := env.Dispatch(workflow.New("synthesis").WaitForWorkflows(workflow.WorkflowIDs(a, b, c), workflow.WaitAny, workflow.ResultKey("first")).Then("IncStep"), enginetest.Obj("n", 0))
		env.RunOf(w)
		env.RunOf(b)
		require.Equal(t, "running", env.Workflow(w).Status)
		require.Equal(t, fmt.Sprintf(`{"n":0,"first":{"%d":{"label":"b","summary":"done b"}}}`, b), env.PublicJSON(w))
	})
	t.Run("quorum", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a, b, c := env.Research("a"), env.Research("b"), env.Research("c")
		w := env.Dispatch(workflow.New("synthesis").WaitForWorkflows(workflow.WorkflowIDs(a, b, c), workflow.WaitQuorum, workflow.Quorum(2), workflow.ResultKey("research")), nil)
		env.RunOf(w)
		require.Equal(t, fmt.Sprintf(`{"type":"workflow","step_index":0,"wait_mode":"quorum","result_key":"research","waiting_for":["%d","%d","%d"],"step_name":"wait_for_workflows_0","quorum":2}`, a, b, c), env.WaitJSON(w))
		env.RunOf(c)
		require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)
		env.RunOf(a)
		require.Equal(t, "completed", env.Workflow(w).Status)
		require.Equal(t, fmt.Sprintf(`{"research":{"%d":{"label":"a","summary":"done a"},"%d":{"label":"c","summary":"done c"}}}`, a, c), env.PublicJSON(w))
	})
	t.Run("merged without a result key", func(t *testing.T) {
		t.Parallel()
		env := newEngineEnv(t)
		a := env.Research("a")
		w := env.Dispatch(workflow.New("synthesis").WaitForWorkflow(workflow.WorkflowIDs(a)), enginetest.Obj("own", 1))
		env.RunOf(w)
		env.RunOf(a)
		require.Equal(t, `{"own":1,"label":"a","summary":"done a"}`, env.PublicJSON(w))
	})
}

// seed 003: the ids come from a state key a previous step wrote.
func TestEngineWaitForWorkflowsFromState(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	a, b := env.Research("a"), env.Research("b")
	env.step("Plan", constStep("dependency_ids", []any{a, b, a, 0}))
	w := env.Dispatch(workflow.New("aggregator").Then("Plan").WaitForWorkflows(workflow.WorkflowIDsFrom("dependency_ids"), workflow.ResultKey("results")), nil)
	env.RunOf(w)
	require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)
	require.Equal(t, []int64{a, b}, env.Deps(w), "ids are normalized: ints > 0, first occurrence kept")
	env.RunOf(a)
	env.RunOf(b)
	require.Equal(t, "completed", env.Workflow(w).Status)

	// wait_for_workflow('dependency_id') with a scalar id in state.
	c := env.Research("c")
	w2 := env.Dispatch(workflow.New("single").WaitForWorkflow(workflow.WorkflowIDsFrom("dependency_id"), workflow.ResultKey("dep")), enginetest.Obj("dependency_id", c))
	env.RunOf(w2)
	env.RunOf(c)
	require.Equal(t, fmt.Sprintf(`{"dependency_id":%d,"dep":{"label":"c","summary":"done c"}}`, c), env.PublicJSON(w2))
}

// A dependency that finished before the wait runs: the placeholder settles
// at once and no waiting status, _wait or dependency row is ever written.
func TestEngineWaitForWorkflowAlreadyFinished(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	a := env.Research("a")
	env.RunOf(a)
	w := env.Dispatch(workflow.New("late").WaitForWorkflow(workflow.WorkflowIDs(a), workflow.ResultKey("dep")).Then("IncStep"), enginetest.Obj("n", 0))
	require.NoError(t, env.RunJob(env.PendingOf(w)[0]))
	wf := env.Workflow(w)
	require.Equal(t, "running", wf.Status)
	require.Equal(t, 1, wf.CurrentStep)
	require.Equal(t, []string{"step_started", "workflow_resumed"}, env.WorkflowEvents(w))
	require.Empty(t, env.Deps(w))
	require.Len(t, env.PendingOf(w), 1)
	// An empty id list: All is satisfied at once, Any and Quorum fail.
	all := env.Dispatch(workflow.New("empty").WaitForWorkflows(workflow.WorkflowIDsFrom("none")), nil)
	env.RunOf(all)
	require.Equal(t, "completed", env.Workflow(all).Status)
	anyW := env.Dispatch(workflow.New("empty").WaitForWorkflows(workflow.WorkflowIDsFrom("none"), workflow.WaitAny), nil)
	env.RunOf(anyW)
	require.Equal(t, "failed", env.Workflow(anyW).Status)
}

// StartWorkflowsTest and seed 003: start_agents with group_key
// "researchers", then wait_for_agent_group("researchers", Quorum, 2,
// "agent_results"): the parent continues at once after starting them,
// the children inherit the parent's public state and their item, and the
// group wait resumes after two of three.
func TestEngineStartAgentsGroupQuorum(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	child := workflow.New("agent_task").Then("ResearchTopicStep").Version("agent-task.v1")
	parent := env.Dispatch(workflow.New("brief_research").
		Then("PlanTopicsStep").
		StartAgents("agent_tasks", child, workflow.GroupKey("researchers")).
		WaitForAgentGroup("researchers", workflow.WaitQuorum, workflow.Quorum(2)).
		Then("SynthesizeBriefStep"), enginetest.Obj("brief_id", 7))
	env.RunNext(2) // PlanTopicsStep, start_agents
	wf := env.Workflow(parent)
	require.Equal(t, 2, wf.CurrentStep, "the parent continues at once")
	ids := env.State(parent).WorkflowGroups()
	require.Len(t, ids, 1)
	require.Equal(t, "researchers", ids[0].Key)
	kids := ids[0].IDs
	require.Len(t, kids, 3)
	require.Equal(t, fmt.Sprintf("[%d,%d,%d]", kids[0], kids[1], kids[2]), env.Field(parent, "agent_workflow_ids"))
	for i, k := range kids {
		cwf := env.Workflow(k)
		require.Equal(t, "running", cwf.Status)
		require.False(t, cwf.ParentWorkflowID.Valid, "started workflows are top-level")
		st := env.State(k)
		v, _ := st.DefinitionVersion()
		require.Equal(t, "agent-task.v1", v)
		by, step, ok := st.StartedBy()
		require.True(t, ok)
		require.Equal(t, parent, by)
		require.Equal(t, int64(1), step)
		require.Equal(t, fmt.Sprintf(`{"brief_id":7,"agent_task":"%s","start_item_index":%d}`, []string{"pricing", "competitors", "regulation"}[i], i), env.PublicJSON(k))
	}
	env.RunOf(parent) // the group wait parks
	require.Equal(t, "waiting_for_workflows", env.Workflow(parent).Status)
	require.Contains(t, env.WaitJSON(parent), `"group_key":"researchers","quorum":2`)
	env.RunOf(kids[2])
	require.Equal(t, "waiting_for_workflows", env.Workflow(parent).Status)
	env.RunOf(kids[0])
	wf = env.Workflow(parent)
	require.Equal(t, "running", wf.Status)
	require.Equal(t, 3, wf.CurrentStep)
	results := env.Field(parent, "agent_results")
	require.Contains(t, results, fmt.Sprintf(`"%d":{"brief_id":7,"agent_task":"pricing","start_item_index":0,"finding":"about pricing"}`, kids[0]))
	require.Contains(t, results, fmt.Sprintf(`"%d":{`, kids[2]))
	require.NotContains(t, results, fmt.Sprintf(`"%d":{`, kids[1]))
}

// StartWorkflowsTest: items that are arrays merge their string keys; the
// ids can be waited on later through result_key; inherit_state off starts
// children from their item alone; empty items start nothing.
func TestEngineStartWorkflows(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	env.step("Count", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("counter")
		return enginetest.Obj("counter", enginetest.IntOf(n)+1), nil
	})
	child := workflow.New("campaign_item").Then("Count")
	p := env.Dispatch(workflow.New("campaign").
		StartWorkflows("items", child).
		WaitForWorkflows(workflow.WorkflowIDsFrom("started_workflow_ids"), workflow.ResultKey("children")), enginetest.Obj("campaign", "spring", "items", []any{map[string]any{"topic": "a", "_secret": 1}, map[string]any{"topic": "b"}}))
	env.RunOf(p)
	ids := enginetest.NormalizeWorkflowIDs(phpjson.Get(env.State(p).Object(), "started_workflow_ids"))
	require.Len(t, ids, 2)
	require.Equal(t, `{"campaign":"spring","topic":"a","start_item_index":0}`, env.PublicJSON(ids[0]))
	env.RunOf(ids[0])
	env.RunOf(ids[1])
	require.Equal(t, "completed", env.Workflow(p).Status)
	require.Contains(t, env.Field(p, "children"), fmt.Sprintf(`"%d":{"campaign":"spring","topic":"b","start_item_index":1,"counter":1}`, ids[1]))
	var logs []string
	require.NoError(t, env.DB.Select(&logs, "SELECT event FROM `"+env.Store.Tables()["logs"]+"` WHERE job_id = ? ORDER BY id", env.Jobs(p)[0].ID))
	require.Equal(t, []string{"started", "completed", "completed"}, logs, "the engine and the worker both log completed")

	bare := env.Dispatch(workflow.New("bare").StartWorkflows("items", child, workflow.InheritState(false), workflow.PayloadKey("thing")), enginetest.Obj("other", 1, "items", []any{"x"}))
	env.RunOf(bare)
	kid := enginetest.NormalizeWorkflowIDs(phpjson.Get(env.State(bare).Object(), "started_workflow_ids"))
	require.Len(t, kid, 1)
	require.Equal(t, `{"thing":"x","start_item_index":0}`, env.PublicJSON(kid[0]))

	empty := env.Dispatch(workflow.New("empty").StartAgents("items", child, workflow.GroupKey("g")).WaitForAgentGroup("g", workflow.WaitAny), enginetest.Obj("items", []any{}))
	env.RunOf(empty)
	require.Equal(t, "failed", env.Workflow(empty).Status, "an Any wait on an empty group fails")
	require.Equal(t, `{"g":[]}`, env.Field(empty, workflow.KeyWorkflowGroups))
}

// max_started_workflows fails the step before any child is created.
func TestEngineStartWorkflowsBudget(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	p := env.Dispatch(workflow.New("p").StartWorkflows("items", workflow.New("c").Then("IncStep")).MaxStartedWorkflows(1), enginetest.Obj("items", []any{1, 2}))
	env.RunOf(p)
	wf := env.Workflow(p)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Start step 'start_workflows_0' would exceed max_started_workflows budget of 1.", wf.ErrorMessage.String)
	var n int
	require.NoError(t, env.DB.Get(&n, "SELECT COUNT(*) FROM `"+env.Store.Tables()["workflows"]+"`"))
	require.Equal(t, 1, n)
}

// What PHP lacks: a waiter whose wake-up was missed (its dependency was
// completed by a process that does not reconcile, or its dependency rows
// are gone) is resumed by the sweeper; a dependency failed by a for_each
// branch (which PHP never reconciles) fails it.
func TestEngineSweepWaiting(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	a := env.Research("a")
	w := env.Dispatch(workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(a), workflow.ResultKey("dep")), nil)
	env.RunOf(w)
	tbl := env.Store.Tables()
	_, err := env.DB.Exec("UPDATE `"+tbl["workflows"]+"` SET status = 'completed', state = '{\"x\":1}' WHERE id = ?", a)
	require.NoError(t, err)
	_, err = env.DB.Exec("DELETE FROM `" + tbl["workflow_dependencies"] + "`")
	require.NoError(t, err)
	require.Equal(t, "waiting_for_workflows", env.Workflow(w).Status)

	res, err := env.Engine.SweepWaiting(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, workflow.SweepResult{Checked: 1, Settled: 1}, res)
	require.Equal(t, "completed", env.Workflow(w).Status)
	require.Equal(t, `{"dep":{"x":1}}`, env.PublicJSON(w))

	res, err = env.Engine.SweepWaiting(env.Ctx())
	require.NoError(t, err)
	require.Equal(t, workflow.SweepResult{}, res, "nothing left to sweep")
}

// StartWorkflowsTest agent_aliases_wrap_start_and_wait_primitives: the
// agent defaults (agent_workflow_ids, agent_task, agent_results).
func TestEngineAgentAliases(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	p := env.Dispatch(workflow.New("agents").StartAgents("tasks", workflow.New("agent_task").Then("ResearchTopicStep")).WaitForAgents(workflow.WorkflowSource{}), enginetest.Obj("tasks", []any{"x", "y"}))
	env.RunOf(p)
	ids := enginetest.NormalizeWorkflowIDs(phpjson.Get(env.State(p).Object(), workflow.DefaultAgentIDsKey))
	require.Len(t, ids, 2)
	require.Equal(t, "waiting_for_workflows", env.Workflow(p).Status)
	env.RunOf(ids[0])
	env.RunOf(ids[1])
	require.Equal(t, "completed", env.Workflow(p).Status)
	require.Equal(t, fmt.Sprintf(`{"%d":{"agent_task":"x","start_item_index":0,"finding":"about x"},"%d":{"agent_task":"y","start_item_index":1,"finding":"about y"}}`, ids[0], ids[1]),
		env.Field(p, workflow.DefaultAgentResult))
}

// WorkflowCompensationTest: a wait step's and a run_workflow step's
// compensation snapshots hold the state after they settled.
func TestEngineWaitCompensationSnapshots(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("comp").
		WaitForSignal("go").CompensateWith("UndoSignal").
		RunWorkflow("sub", workflow.New("sub").Then("IncStep")).CompensateWith("UndoSub"), enginetest.Obj("n", 0))
	env.RunOf(id)
	env.signal(id, "go", enginetest.Obj("by", "me"))
	env.RunOf(id)
	child := env.childOf(id)
	env.RunOf(child.ID)
	require.Equal(t, "completed", env.Workflow(id).Status)
	require.Equal(t, `[{"step_index":0,"handler":"UndoSignal","payload":[],"state":{"n":0,"by":"me"}},`+
		`{"step_index":1,"handler":"UndoSub","payload":[],"state":{"n":1,"by":"me"}}]`, env.Field(id, workflow.KeyCompensationStack))
}

// A wait whose settling breaks a budget: Signal returns the violation (and
// stores nothing, as PHP's rolled-back transaction); a background wake-up
// fails the workflow instead of leaving it parked.
func TestEngineWaitBudgetViolation(t *testing.T) {
	t.Parallel()
	env := newEngineEnv(t)
	id := env.Dispatch(workflow.New("w").WaitForSignal("go").MaxStateBytes(20), nil)
	env.RunOf(id)
	err := env.Engine.Signal(env.Ctx(), id, "go", enginetest.Obj("big", "0123456789012345678901234567890"))
	require.True(t, workflow.IsConstraintViolation(err), "%v", err)
	require.Empty(t, env.signalRows(id))
	require.Equal(t, "waiting_for_signal", env.Workflow(id).Status)

	_, err = env.DB.Exec("INSERT INTO `"+env.Store.Tables()["signals"]+"` (workflow_id, signal_name, payload) VALUES (?, 'go', '{\"big\":\"0123456789012345678901234567890\"}')", id)
	require.NoError(t, err)
	_, _, err = env.Engine.PollSignals(env.Ctx(), 0)
	require.NoError(t, err)
	wf := env.Workflow(id)
	require.Equal(t, "failed", wf.Status)
	require.Equal(t, "Workflow exceeded max_state_bytes budget of 20.", wf.ErrorMessage.String)

	dep := env.Research("a")
	w := env.Dispatch(workflow.New("w").WaitForWorkflow(workflow.WorkflowIDs(dep), workflow.ResultKey("dep")).MaxStateBytes(10), nil)
	env.RunOf(w)
	env.RunOf(dep)
	require.Equal(t, "failed", env.Workflow(w).Status)
}
