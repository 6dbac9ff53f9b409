package workflow

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// TestBuilderMatchesFixtures rebuilds, with the Go builder, every workflow
// the recorded scenarios dispatched (their PHP is each fixture's "code";
// the seed003 dependency workflows are abridged there and were read back
// from their rows and definition hashes), and requires the row and the
// first step's jobs the plugin wrote. Rows first recorded after the
// runtime had touched them are compared after undoing exactly that
// change (undo says what and why). Children started by the runtime
// (run_workflow, start_agents) are dispatched from their definition
// bundles, as the runtime does.
func TestBuilderMatchesFixtures(t *testing.T) {
	t.Parallel()
	obj := func(s string) *phpjson.Object { return decodeObject(t, s) }
	summary := func(name, label string) func(*testing.T, fixture) (*Dispatch, error) {
		return func(*testing.T, fixture) (*Dispatch, error) {
			return New(name).Then("SummaryStep").Build(obj(`{"label":"` + label + `"}`))
		}
	}
	cases := []struct {
		file     string
		workflow int64
		build    func(*testing.T, fixture) (*Dispatch, error)
		undo     func(*State)
		parent   [2]int64
	}{
		{file: "wf_sequence.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("seq").Then("IncStep").Then("IncStep", Named("second")).Then("IncStep").
				Build(obj(`{"n":0,"title":"\u00dcn\u00ef\/code"}`))
		}},
		{file: "wf_parallel.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("par").Parallel("BranchA", "BranchB").Then("IncStep").Build(obj(`{"n":10}`))
		}},
		{file: "wf_delay_repeat.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("loop").Then("DraftStep", Named("draft")).Delay(30*time.Second).
				RepeatUntil("draft", StateKey("approved"), Expected(true), MaxIterations(3)).
				Then("IncStep").Build(obj(`{"n":0}`))
		}},
		{file: "wf_for_each_quorum_reducer.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("fe").Then("PlanItems").
				ForEach("items", "ItemStep", ResultKey("results"), ForEachQuorum, Quorum(2), Reducer("SumReducer")).
				Then("IncStep").Build(nil)
		}},
		{file: "wf_idempotency_key.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("once").IdempotencyKey("order-42").Then("IncStep").Build(obj(`{"n":0}`))
		}},
		{file: "wf_run_workflow.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("outer").Then("IncStep").
				RunWorkflow("inner", New("inner").Then("IncStep").Then("IncStep")).
				Then("IncStep").Build(obj(`{"n":0}`))
		}},
		{file: "wf_run_workflow.json", workflow: 2, parent: [2]int64{1, 1}, build: func(t *testing.T, f fixture) (*Dispatch, error) {
			// The run_workflow placeholder (snapshot 2) dispatched the child
			// from the parent as it was after step 0 (snapshot 1).
			parent := parseState(t, str(t, f.Snapshots[1].Workflows[0], "state"))
			run := stepAt(t, parent, 1).(*RunWorkflowStep)
			return run.ChildDefinition(parent).Dispatch(parent.Public(), DefinitionDispatchOptions{
				ParentWorkflowID: sql.NullInt64{Int64: 1, Valid: true},
				ParentStepIndex:  sql.NullInt64{Int64: 1, Valid: true},
			})
		}},
		{file: "wf_signal.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("approve").Then("IncStep").WaitForSignal("approval").Then("IncStep").Build(obj(`{"n":0}`))
		}},
		{file: "wf_cancel_compensation.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("comp").Then("IncStep").CompensateWith("ReleaseLocks").WaitForSignal("go").Then("IncStep").
				Build(obj(`{"n":0}`))
		}, undo: func(st *State) {
			// First recorded after IncStep ran: n went 0 -> 1 and the
			// compensation snapshot was appended.
			st.Set("n", phpjson.Int(0))
			st.Delete(KeyCompensationStack)
		}},
		{file: "seed003_start_agents_group.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			agent := New("agent_task").Then("ResearchTopicStep")
			return New("brief_research").Then("PlanTopicsStep").
				StartAgents("agent_tasks", agent, GroupKey("researchers")).
				WaitForAgentGroup("researchers", WaitQuorum, Quorum(2), ResultKey("agent_results")).
				Then("SynthesizeBriefStep").Build(obj(`{"brief_id":7}`))
		}},
		{file: "seed003_start_agents_group.json", workflow: 2, build: startedAgent(`{"brief_id":7,"agent_task":"pricing","start_item_index":0}`)},
		{file: "seed003_start_agents_group.json", workflow: 3, build: startedAgent(`{"brief_id":7,"agent_task":"competitors","start_item_index":1}`)},
		{file: "seed003_start_agents_group.json", workflow: 4, build: startedAgent(`{"brief_id":7,"agent_task":"regulation","start_item_index":2}`)},
		{file: "seed003_wait_all_fails.json", workflow: 1, build: summary("dep_ok", "ok")},
		{file: "seed003_wait_all_fails.json", workflow: 2, build: func(*testing.T, fixture) (*Dispatch, error) {
			// FailingStep's PHP class says max_attempts 1; that reaches the job.
			return New("dep_bad").Then("FailingStep").
				WithHandlerMetadata(HandlerMetadataMap{"FailingStep": {MaxAttempts: 1}}).Build(nil)
		}},
		{file: "seed003_wait_all_fails.json", workflow: 3, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("needs_all").WaitForWorkflows(WorkflowIDs(1, 2), WaitAll, ResultKey("deps")).Then("SummaryStep").Build(nil)
		}, undo: func(st *State) {
			// First recorded parked: the placeholder appended _wait.
			st.Delete(KeyWait)
		}},
		{file: "seed003_wait_any_from_state.json", workflow: 1, build: summary("dep_a", "a"), undo: func(st *State) {
			// First recorded completed: SummaryStep appended its output.
			st.Delete("summary")
		}},
		{file: "seed003_wait_any_from_state.json", workflow: 2, build: summary("dep_b", "b")},
		{file: "seed003_wait_any_from_state.json", workflow: 3, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("aggregator").WaitForWorkflows(WorkflowIDsFrom("dependency_ids"), WaitAny, ResultKey("winner")).
				Build(obj(`{"dependency_ids":[1,2]}`))
		}},
		{file: "seed003_wait_for_workflow.json", workflow: 1, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("research_run").Then("PlanResearchStep").ForEach("tasks", "ExecuteResearchTask", ResultKey("results")).
				Build(obj(`{"brief_id":42}`))
		}},
		{file: "seed003_wait_for_workflow.json", workflow: 2, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("editorial_run").WaitForWorkflow(WorkflowIDs(1), ResultKey("research")).Then("DraftBriefStep").Build(nil)
		}},
		{file: "seed003_wait_quorum.json", workflow: 1, build: summary("dep_a", "a")},
		{file: "seed003_wait_quorum.json", workflow: 2, build: summary("dep_b", "b")},
		{file: "seed003_wait_quorum.json", workflow: 3, build: summary("dep_c", "c")},
		{file: "seed003_wait_quorum.json", workflow: 4, build: func(*testing.T, fixture) (*Dispatch, error) {
			return New("synthesis_run").WaitForWorkflows(WorkflowIDs(1, 2, 3), WaitQuorum, ResultKey("dependencies"), Quorum(2)).
				Then("SummaryStep").Build(obj(`{"label":"q"}`))
		}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/workflow_%d", c.file, c.workflow), func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, c.file)
			built, err := c.build(t, f)
			require.NoError(t, err)

			snap, row := f.firstRow(t, c.workflow)
			want := parseState(t, str(t, row, "state"))
			if c.undo != nil {
				c.undo(want)
			}
			wantState, err := want.Encode()
			require.NoError(t, err)
			require.Equal(t, string(wantState), string(built.Workflow.State), "workflow %d state", c.workflow)
			require.Equal(t, str(t, row, "name"), built.Workflow.Name)
			require.EqualValues(t, num(t, row, "total_steps"), built.Workflow.TotalSteps)
			require.False(t, built.Workflow.DeadlineSeconds.Valid)
			require.Equal(t, sql.NullInt64{Int64: c.parent[0], Valid: c.parent[0] != 0}, built.Workflow.ParentWorkflowID)
			require.Equal(t, sql.NullInt64{Int64: c.parent[1], Valid: c.parent[0] != 0}, built.Workflow.ParentStepIndex)

			var firstJobs []*phpjson.Object
			for _, j := range f.jobsOf(t, snap, c.workflow) {
				if num(t, j, "step_index") == 0 {
					firstJobs = append(firstJobs, j)
				}
			}
			require.GreaterOrEqual(t, len(firstJobs), len(built.Jobs))
			require.NotEmpty(t, built.Jobs)
			for i, job := range built.Jobs {
				requireJob(t, firstJobs[i], job)
				require.Zero(t, job.DelaySeconds)
			}

			var keys []string
			for _, k := range f.Snapshots[snap].DispatchKeys {
				if num(t, k, "workflow_id") == c.workflow {
					keys = append(keys, str(t, k, "dispatch_key"))
				}
			}
			if built.IdempotencyKey == "" {
				require.Empty(t, keys)
			} else {
				require.Equal(t, []string{built.IdempotencyKey}, keys)
			}
		})
	}
}

// startedAgent dispatches one child of seed003_start_agents_group's
// start_agents step from the bundle stored in the parent's definition,
// with the child state the step builds for that item.
func startedAgent(initial string) func(*testing.T, fixture) (*Dispatch, error) {
	return func(t *testing.T, f fixture) (*Dispatch, error) {
		parent := parseState(t, str(t, f.Snapshots[0].Workflows[0], "state"))
		start := stepAt(t, parent, 1).(*StartWorkflowsStep)
		return start.WorkflowDefinition.Dispatch(decodeObject(t, initial), DefinitionDispatchOptions{
			StartedByWorkflowID: sql.NullInt64{Int64: 1, Valid: true},
			StartedByStepIndex:  sql.NullInt64{Int64: 1, Valid: true},
		})
	}
}
