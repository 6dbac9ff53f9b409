package workflow

import (
	"bufio"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// goldenCase is one line of testdata/golden.jsonl: what the real plugin
// wrote for one builder chain or bundle dispatch, or the exception it
// threw (see testdata/README.md).
type goldenCase struct {
	Name string
	Kind string
	Line *phpjson.Object
}

func loadGolden(t *testing.T) map[string]goldenCase {
	t.Helper()
	f, err := os.Open("testdata/golden.jsonl")
	require.NoError(t, err)
	defer f.Close()
	cases := map[string]goldenCase{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		v, err := phpjson.Decode(sc.Bytes())
		require.NoError(t, err)
		o := mustObject(t, v)
		c := goldenCase{Name: str(t, o, "case"), Kind: str(t, o, "kind"), Line: o}
		require.NotEqual(t, "no_error", c.Kind, "%s: the PHP chain was expected to throw", c.Name)
		cases[c.Name] = c
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, cases)
	return cases
}

// goldenMetadata is what Queuety reads from the generator's handler
// classes: #[QueuetyHandler(queue: 'meta-queue', max_attempts: 5)], and
// config() arrays. config()'s list backoff [5, 10] keeps only string keys
// in HandlerMetadata::from_class, so it arrives as [] and is still written.
var goldenMetadata = HandlerMetadataMap{
	"MetaAttrStep": {Queue: "meta-queue", MaxAttempts: 5},
	"MetaConfigStep": {Queue: "cfg-queue", MaxAttempts: 4, Backoff: phpjson.List(), RateLimit: &RateLimit{Max: 10, Window: 60},
		ConcurrencyGroup: "grp", ConcurrencyLimit: 2, CostUnits: 7},
	"MetaLinearStep": {Backoff: phpjson.String("linear"), ConcurrencyLimit: 3},
}

// goldenChain is the Go spelling of one of the generator's PHP chains
// (gen_golden.php shows the PHP under the same case name) and the initial
// state it was dispatched with.
type goldenChain struct {
	builder func() *Builder
	initial string
}

func goldenChains() map[string]goldenChain {
	fullChild := func() *Builder {
		return New("full_child").OnQueue("child-q").WithPriority(PriorityNormal).MaxAttempts(4).
			OnCancel("ChildCancel").PruneStateAfter(2).MustCompleteWithin(90 * time.Second).
			OnDeadline("ChildDeadline").Version("child.v1").
			MaxTransitions(20).MaxStateBytes(10000).MaxStartedWorkflows(3).CompensateOnFailure().
			Then("ChildStep").CompensateWith("ChildUndo")
	}
	return map[string]goldenChain{
		"sequence": {func() *Builder {
			return New("seq").Then("IncStep").Then("IncStep", Named("second")).Then("IncStep")
		}, `{"n":0,"title":"\u00dcn\u00ef\/code"}`},
		"all_settings": {func() *Builder {
			return New("all").OnQueue("bulk").WithPriority(PriorityHigh).MaxAttempts(5).
				OnCancel("CancelHandler").PruneStateAfter(3).MustCompleteWithin(2*time.Minute + 30*time.Second).
				OnDeadline("DeadlineHandler").Version(" v2 ").IdempotencyKey(" key-1 ").
				MaxTransitions(10).MaxForEachItems(5).MaxStateBytes(4096).MaxCostUnits(50).
				MaxStartedWorkflows(4).CompensateOnFailure().
				Then("StepA")
		}, `{"x":1,"_private":"kept","emoji":"\ud83d\ude00","html":"<a href=\"x\">&<\/a>"}`},
		"zero_settings": {func() *Builder {
			return New("zero").PruneStateAfter(0).MustCompleteWithin(0).Then("StepA")
		}, ""},
		"empty_queue_zero_attempts": {func() *Builder {
			return New("edge").OnQueue("").MaxAttempts(0).Then("StepA")
		}, ""},
		"parallel_compensated": {func() *Builder {
			return New("par").Parallel("BranchA", " BranchB ").CompensateWith("Undo").Then("StepC")
		}, ""},
		"for_each_defaults": {func() *Builder {
			return New("fe").ForEach("items", "ItemStep").Then("After")
		}, `{"items":[1,2]}`},
		"for_each_full": {func() *Builder {
			return New("fe_full").Then("Plan").
				ForEach("items", "ItemStep", ResultKey("res"), ForEachFirstSuccess, Quorum(2), Reducer("Reducer"), Named("fan")).
				CompensateWith("Undo").
				ForEach("more", "ItemStep", ForEachQuorum)
		}, ""},
		"repeat": {func() *Builder {
			expected, _ := phpjson.DecodeString(`{"a":1,"b":[1.5,null]}`)
			return New("rep").Then("Draft", Named("draft")).
				RepeatWhile("draft", StateKey("flag"), Expected(expected), MaxIterations(2)).
				RepeatUntil(" draft ", Condition(" Cond "), Named("loop_end")).
				RepeatUntil("draft", StateKey("done")).CompensateWith("Undo")
		}, ""},
		"run_workflow": {func() *Builder {
			sub := New("ignored_sub_name").OnQueue("sub-q").WithPriority(PriorityUrgent).MaxAttempts(2).
				Version("sub.v9").Then("SubStep").Delay(5 * time.Second)
			b := New("outer").Then("StepA").RunWorkflow("child", sub).CompensateWith("Undo")
			sub.Then("LateStep") // the sub-builder is read at Build, as at PHP's dispatch
			return b
		}, `{"n":0}`},
		"delays": {func() *Builder {
			return New("delays").Delay(30 * time.Second).Then("StepA").Delay(time.Hour + time.Minute).
				Delay(24 * time.Hour).CompensateWith("Undo")
		}, ""},
		"signals": {func() *Builder {
			match, _ := phpjson.DecodeString(`{"a":{"b":1}}`)
			role, _ := phpjson.DecodeString(`{"role":"admin"}`)
			matchObj, _ := match.AsObject()
			roleObj, _ := role.AsObject()
			return New("sig").WaitForSignal("go").
				WaitForSignal(" spaced ", ResultKey("rk"), MatchPayload(matchObj), CorrelationKey("corr")).
				WaitForSignals([]string{"a", " ", "b"}, WaitAny).
				WaitForSignals([]string{" only "}).
				WaitForApproval().
				WaitForDecision().
				WaitForInput(Signal("form"), WithoutResultKey(), Named("custom_input")).
				WaitForDecision(DecisionSignals("yes", "yes"), ResultKey("same")).
				WaitForApproval(Signal("ok"), ResultKey("approved_by"), Named("approve"), MatchPayload(roleObj), CorrelationKey("ticket")).
				CompensateWith("Undo")
		}, ""},
		"workflow_waits": {func() *Builder {
			return New("waits").WaitForWorkflow(WorkflowIDs(5)).
				WaitForWorkflow(WorkflowIDsFrom("dep_key"), ResultKey("res")).
				WaitForWorkflows(WorkflowIDs(3, 0, -1, 3, 7), WaitAny).
				WaitForWorkflows(WorkflowIDsFrom(" ids_key "), WaitQuorum, ResultKey("r"), Named("named"), Quorum(2)).
				WaitForWorkflows(WorkflowIDs(1), WaitAll, Quorum(9)).
				WaitForWorkflows(WorkflowIDs()).
				WaitForWorkflowGroup("g").
				WaitForWorkflowGroup(" g2 ", WaitQuorum, Quorum(3), ResultKey("out")).
				WaitForWorkflowGroup("g3", WaitAny, Quorum(4)).
				WaitForAgents(WorkflowSource{}).
				WaitForAgents(WorkflowIDs(4, 5), WaitAny, WithoutResultKey()).
				WaitForAgentGroup("").
				WaitForAgentGroup("team", WaitQuorum, Quorum(1), WithoutResultKey(), Named("team_wait")).
				CompensateWith("Undo")
		}, ""},
		"start_workflows": {func() *Builder {
			return New("starter").
				StartWorkflows("items", New("plain_child").Then("ChildStep")).
				StartWorkflows(" tasks ", fullChild(), ResultKey(" ids "), PayloadKey(" p "), InheritState(false), Named("st"), GroupKey(" grp ")).
				StartAgents("agent_tasks", New("agent").Then("AgentStep"), GroupKey("researchers")).
				StartAgents("more", New("agent").Then("AgentStep"), GroupKey("  ")).CompensateWith("Undo")
		}, `{"items":["a","b"]}`},
		"handler_metadata_attribute": {func() *Builder {
			return New("meta1").Then("MetaAttrStep").WithHandlerMetadata(goldenMetadata)
		}, ""},
		"handler_metadata_config": {func() *Builder {
			return New("meta2").OnQueue("wfq").Then("MetaConfigStep").WithHandlerMetadata(goldenMetadata)
		}, ""},
		"handler_metadata_parallel": {func() *Builder {
			return New("meta3").Parallel("MetaConfigStep", "MetaAttrStep", "MetaLinearStep").WithHandlerMetadata(goldenMetadata)
		}, ""},
		"placeholder_ignores_metadata": {func() *Builder {
			return New("meta4").MaxAttempts(2).ForEach("items", "MetaConfigStep").WithHandlerMetadata(goldenMetadata)
		}, ""},
	}
}

// TestGoldenBuilder requires the Go builder to write what the plugin's
// WorkflowBuilder::dispatch() wrote for the same chain: state bytes
// (definition hash included), row columns, first jobs, the
// workflow_started log's queue and the dispatch key; and the runtime
// definition bundle (build_runtime_definition) start steps embed.
func TestGoldenBuilder(t *testing.T) {
	t.Parallel()
	golden := loadGolden(t)
	chains := goldenChains()
	for name, c := range golden {
		if c.Kind != "builder" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			chain, ok := chains[name]
			require.True(t, ok, "no Go chain for golden case %s", name)
			var initial *phpjson.Object
			if chain.initial != "" {
				initial = decodeObject(t, chain.initial)
			}
			d, err := chain.builder().Build(initial)
			require.NoError(t, err)
			requireGoldenDispatch(t, c.Line, d)

			def, err := chain.builder().RuntimeDefinition()
			require.NoError(t, err)
			got, err := phpjson.Encode(phpjson.ObjectValue(def.Raw))
			require.NoError(t, err)
			require.Equal(t, str(t, c.Line, "definition"), string(got), "build_runtime_definition")
		})
	}
	for name := range chains {
		require.Contains(t, golden, name, "Go chain without a golden case")
		require.Equal(t, "builder", golden[name].Kind, name)
	}
}

// TestGoldenDefinitionDispatch dispatches the generator's bundles the way
// the runtime does (dispatch_definition, start_workflows children,
// run_workflow children) and requires the plugin's rows.
func TestGoldenDefinitionDispatch(t *testing.T) {
	t.Parallel()
	for name, c := range loadGolden(t) {
		if c.Kind != "definition" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bundle, err := phpjson.DecodeString(str(t, c.Line, "bundle"))
			require.NoError(t, err)
			def, err := ParseRuntimeDefinition(bundle)
			require.NoError(t, err)
			initial, err := phpjson.DecodeString(str(t, c.Line, "initial"))
			require.NoError(t, err)
			opts := phpjson.AsArray(phpjson.Get(c.Line, "options"))
			nullable := func(key string) sql.NullInt64 {
				n, ok := phpjson.Get(opts, key).AsInt64()
				return sql.NullInt64{Int64: n, Valid: ok}
			}
			key, _ := phpjson.Get(opts, "idempotency_key").AsString()
			d, err := def.Dispatch(phpjson.AsArray(initial), DefinitionDispatchOptions{
				ParentWorkflowID:    nullable("parent_workflow_id"),
				ParentStepIndex:     nullable("parent_step_index"),
				StartedByWorkflowID: nullable("started_by_workflow_id"),
				StartedByStepIndex:  nullable("started_by_step_index"),
				IdempotencyKey:      key,
				HandlerMetadata:     goldenMetadata,
			})
			require.NoError(t, err)
			requireGoldenDispatch(t, c.Line, d)
		})
	}
}

// requireGoldenDispatch compares a Dispatch with a golden line's rows.
func requireGoldenDispatch(t *testing.T, line *phpjson.Object, d *Dispatch) {
	t.Helper()
	row := mustObject(t, phpjson.Get(line, "workflow"))
	require.Equal(t, str(t, row, "state"), string(d.Workflow.State), "state")
	require.Equal(t, str(t, row, "name"), d.Workflow.Name)
	require.Equal(t, string(StatusRunning), str(t, row, "status"))
	require.EqualValues(t, 0, num(t, row, "current_step"))
	require.EqualValues(t, num(t, row, "total_steps"), d.Workflow.TotalSteps)
	requireNullInt(t, phpjson.Get(row, "parent_workflow_id"), d.Workflow.ParentWorkflowID, "parent_workflow_id")
	requireNullInt(t, phpjson.Get(row, "parent_step_index"), d.Workflow.ParentStepIndex, "parent_step_index")
	if deadline := phpjson.Get(row, "deadline_seconds"); deadline.IsNull() {
		require.False(t, d.Workflow.DeadlineSeconds.Valid, "deadline")
	} else {
		require.True(t, d.Workflow.DeadlineSeconds.Valid, "deadline")
		n, _ := deadline.AsInt64()
		require.InDelta(t, n, d.Workflow.DeadlineSeconds.Int64, 1, "deadline_at - started_at")
	}

	jobs := list(t, line, "jobs")
	require.Len(t, d.Jobs, len(jobs))
	for i, j := range jobs {
		jo := mustObject(t, j)
		requireJob(t, jo, d.Jobs[i])
		require.InDelta(t, num(t, jo, "delay_seconds"), d.Jobs[i].DelaySeconds, 1, "available_at - created_at")
	}

	logRow := mustObject(t, phpjson.Get(line, "started_log"))
	require.Equal(t, d.Workflow.Name, str(t, logRow, "handler"))
	require.Equal(t, str(t, logRow, "queue"), d.Queue, "workflow_started queue")
	require.Equal(t, nullStr(t, line, "dispatch_key"), d.IdempotencyKey)
}

func requireNullInt(t *testing.T, want phpjson.Value, got sql.NullInt64, what string) {
	t.Helper()
	n, ok := want.AsInt64()
	require.Equal(t, sql.NullInt64{Int64: n, Valid: ok}, got, what)
}
