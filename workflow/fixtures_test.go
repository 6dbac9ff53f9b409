package workflow

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// TestFixtureStatesRoundTrip decodes every state the plugin wrote, in
// every snapshot of every scenario, and requires that re-encoding the
// untouched state gives the same bytes, that every step decodes into its
// typed view, and that the step list re-encodes to the stored _steps.
func TestFixtureStatesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, file := range fixtureFiles(t) {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, file)
			for i, s := range f.Snapshots {
				for _, row := range s.Workflows {
					raw := str(t, row, "state")
					st := parseState(t, raw)

					encoded, err := st.Encode()
					require.NoError(t, err)
					require.Equal(t, raw, string(encoded), "snapshot %d (%s), workflow %d", i, s.After, num(t, row, "id"))

					steps := st.Steps()
					require.Len(t, steps, int(num(t, row, "total_steps")), "total_steps")
					values := make([]phpjson.Value, len(steps))
					for k, step := range steps {
						values[k] = step.Value()
						_, err := step.Definition()
						require.NoError(t, err, "step %d", k)
					}
					stored, _ := st.Get(KeySteps)
					want, err := phpjson.Encode(stored)
					require.NoError(t, err)
					got, err := phpjson.Encode(phpjson.List(values...))
					require.NoError(t, err)
					require.Equal(t, string(want), string(got), "_steps")

					current := int(num(t, row, "current_step"))
					if current < len(steps) {
						require.NotEmpty(t, steps[current].Name(current))
					}
					for k := range st.Public().All() {
						require.False(t, IsReserved(k))
					}
				}
			}
		})
	}
}

// TestFixtureFacts reads specific facts of each scenario through the model.
func TestFixtureFacts(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, st *State, row *phpjson.Object)
	cases := []struct {
		file     string
		snapshot int
		workflow int64
		check    check
	}{
		{"wf_sequence.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			title, _ := st.Get("title")
			s, _ := title.AsString()
			require.Equal(t, "Ünï/code", s)
			steps := st.Steps()
			require.Equal(t, "second", steps[1].Name(1))
			require.Equal(t, "2", steps[2].Name(2))
			single := stepAt(t, st, 0).(*SingleStep)
			require.Equal(t, "IncStep", single.Class)
			require.Empty(t, single.Payload.Keys())
			require.Equal(t, "IncStep", steps[0].EventHandler())
			require.Equal(t, "default", st.Queue())
			require.Equal(t, PriorityLow, st.Priority())
			require.EqualValues(t, 3, st.MaxAttempts())
			hash, ok := st.DefinitionHash()
			require.True(t, ok)
			require.Equal(t, "5be75760617c7376868321a652ab24b582a08f8ae0c39196e5e32f3e84862789", hash)
			idx, ok := FindStep(steps, "second")
			require.True(t, ok)
			require.Equal(t, 1, idx)
		}},
		{"wf_parallel.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			par := stepAt(t, st, 0).(*ParallelStep)
			require.Equal(t, []string{"BranchA", "BranchB"}, par.Handlers)
			require.Len(t, par.Branches, 2)
			require.Equal(t, "BranchB", par.Branches[1].Class)
			require.Nil(t, par.Compensation)
		}},
		{"wf_parallel.json", 2, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			require.EqualValues(t, 1, num(t, row, "current_step"))
			require.Equal(t, []string{"n", "a", "shared", "b"}, st.Public().Keys())
			b, _ := st.Public().Get("b")
			f, _ := b.AsFloat64()
			require.InDelta(t, 2.5, f, 0)
		}},
		{"wf_delay_repeat.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			require.Equal(t, "draft", st.Steps()[0].Name(0))
			delay := stepAt(t, st, 1).(*DelayStep)
			require.EqualValues(t, 30, delay.Seconds)
			require.Equal(t, "delay_0", delay.Name)
			require.Equal(t, HandlerDelay, st.Steps()[1].EventHandler())
			rep := stepAt(t, st, 2).(*RepeatStep)
			require.Equal(t, RepeatUntil, rep.Mode)
			require.Equal(t, "draft", rep.TargetStep)
			require.Equal(t, "approved", rep.StateKey)
			require.Equal(t, phpjson.Bool(true), rep.Expected)
			require.Nil(t, rep.Condition)
			require.EqualValues(t, 3, rep.MaxIterations)
			require.Zero(t, st.RepeatIterations(2))
		}},
		{"wf_delay_repeat.json", 3, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			require.EqualValues(t, 0, num(t, row, "current_step"), "the repeat jumped back")
			require.EqualValues(t, 1, st.RepeatIterations(2))
		}},
		{"wf_for_each_quorum_reducer.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			require.Empty(t, st.Public().Keys(), "dispatched with []")
			fe := stepAt(t, st, 1).(*ForEachStep)
			require.Equal(t, "items", fe.ItemsKey)
			require.Equal(t, "ItemStep", fe.Class)
			require.Equal(t, ForEachQuorum, fe.Mode)
			require.EqualValues(t, 2, fe.Quorum)
			require.Equal(t, "SumReducer", fe.Reducer.Class)
			require.Equal(t, "results", fe.AggregateKey(1))
			_, ok := st.ForEachRuntime(1)
			require.False(t, ok)
		}},
		{"wf_for_each_quorum_reducer.json", 2, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			rt, ok := st.ForEachRuntime(1)
			require.True(t, ok)
			require.True(t, rt.Initialized)
			require.Len(t, rt.Items, 3)
			third, _ := rt.Items[2].AsString()
			require.Equal(t, "ü", third)
			require.Empty(t, rt.Results)
			require.False(t, rt.HasWinnerIndex)
			require.False(t, rt.Settled)
		}},
		{"wf_for_each_quorum_reducer.json", 3, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			rt, _ := st.ForEachRuntime(1)
			require.Len(t, rt.Results, 1)
			require.EqualValues(t, 0, rt.Results[0].Index)
			require.EqualValues(t, 3, rt.Results[0].JobID)
			require.True(t, rt.HasWinnerIndex)
			require.EqualValues(t, 0, rt.WinnerIndex)
			require.False(t, rt.Settled)
		}},
		{"wf_for_each_quorum_reducer.json", 4, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			rt, _ := st.ForEachRuntime(1)
			require.True(t, rt.Settled)
			require.Len(t, rt.Results, 2)
			require.Equal(t, "y/z", func() string { s, _ := rt.Results[1].Item.AsString(); return s }())
			require.EqualValues(t, 2, num(t, row, "current_step"))
			total, _ := st.Get("total_len")
			n, _ := total.AsInt64()
			require.EqualValues(t, 4, n)
		}},
		{"wf_signal.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			w := stepAt(t, st, 1).(*WaitForSignalStep)
			require.Equal(t, []string{"approval"}, w.SignalNames)
			require.Equal(t, WaitAll, w.Mode)
			require.Empty(t, w.ResultKey)
			require.Empty(t, w.HumanWait)
			require.Zero(t, w.MatchPayload.Len())
			require.Zero(t, w.DecisionMap.Len())
			require.Equal(t, HandlerWaitForSignal, st.Steps()[1].EventHandler())
			_, waiting := st.Wait()
			require.False(t, waiting)
		}},
		{"wf_signal.json", 2, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			require.Equal(t, string(StatusWaitingForSignal), str(t, row, "status"))
			w, ok := st.Wait()
			require.True(t, ok)
			require.Equal(t, "signal", w.Type)
			require.EqualValues(t, 1, w.StepIndex)
			require.Equal(t, WaitAll, w.Mode)
			require.Equal(t, []string{"approval"}, w.WaitingFor)
			require.Equal(t, "wait_for_approval", w.StepName)
			require.NotNil(t, w.MatchPayload)
		}},
		{"wf_signal.json", 3, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			_, waiting := st.Wait()
			require.False(t, waiting, "_wait is cleared when the signal settles the step")
			by, _ := st.Get("by")
			s, _ := by.AsString()
			require.Equal(t, "admin@example.com", s)
		}},
		{"wf_cancel_compensation.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			comp, ok := st.Steps()[0].Compensation()
			require.True(t, ok)
			require.Equal(t, "ReleaseLocks", comp.Class)
			require.Nil(t, stepAt(t, st, 2).Common().Compensation)
			stack := st.CompensationStack()
			require.Len(t, stack, 1)
			require.EqualValues(t, 0, stack[0].StepIndex)
			require.Equal(t, "ReleaseLocks", stack[0].Handler)
			require.Zero(t, stack[0].Payload.Len())
			require.Equal(t, []string{"n"}, stack[0].State.Keys())
			_, done := st.Compensated()
			require.False(t, done)
		}},
		{"wf_cancel_compensation.json", 2, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			require.Equal(t, string(StatusCancelled), str(t, row, "status"))
			cause, ok := st.Compensated()
			require.True(t, ok)
			require.Equal(t, "cancel", cause)
			w, ok := st.Wait()
			require.True(t, ok, "a cancelled waiter keeps its stale _wait")
			require.Equal(t, []string{"go"}, w.WaitingFor)
		}},
		{"wf_idempotency_key.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			key, ok := st.IdempotencyKey()
			require.True(t, ok)
			require.Equal(t, "order-42", key)
		}},
		{"wf_run_workflow.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			run := stepAt(t, st, 1).(*RunWorkflowStep)
			require.Equal(t, "inner", run.WorkflowName)
			require.Len(t, run.WorkflowSteps, 2)
			require.Equal(t, "default", run.WorkflowQueue)
			require.True(t, run.HasWorkflowPriority)
			require.EqualValues(t, 3, run.WorkflowMaxAttempts)
			require.Equal(t, HandlerRunWorkflow, st.Steps()[1].EventHandler())
		}},
		{"wf_run_workflow.json", 2, 2, func(t *testing.T, st *State, row *phpjson.Object) {
			require.EqualValues(t, 1, num(t, row, "parent_workflow_id"))
			require.EqualValues(t, 1, num(t, row, "parent_step_index"))
			_, ok := st.DefinitionHash()
			require.False(t, ok, "run_workflow children carry no definition hash")
		}},
		{"seed003_start_agents_group.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			start := stepAt(t, st, 1).(*StartWorkflowsStep)
			require.Equal(t, "start_agents", start.Name)
			require.Equal(t, "agent_tasks", start.ItemsKey)
			require.Equal(t, "agent_workflow_ids", start.ResultKey)
			require.Equal(t, "agent_task", start.PayloadKey)
			require.True(t, start.InheritState)
			require.Equal(t, "researchers", start.GroupKey)
			def := start.WorkflowDefinition
			require.Equal(t, "agent_task", def.Name)
			require.Len(t, def.Steps, 1)
			require.Equal(t, "00bc138e8251a12e7e29e6ede45067bc52e7f41e6ea99ba9f745f9bd80448a8c", def.DefinitionHash)
			require.True(t, def.WorkflowBudget.IsZero())
			wait := stepAt(t, st, 2).(*WaitForWorkflowsStep)
			require.Equal(t, "wait_for_agent_group", wait.Name)
			require.Equal(t, "researchers", wait.WorkflowGroupKey)
			require.False(t, wait.HasWorkflowIDs)
			require.Equal(t, WaitQuorum, wait.Mode)
			require.EqualValues(t, 2, wait.Quorum)
			require.Equal(t, "agent_results", wait.ResultKey)
			require.Empty(t, wait.ResolveIDs(st), "no group yet")
		}},
		{"seed003_start_agents_group.json", 2, 1, func(t *testing.T, st *State, row *phpjson.Object) {
			require.EqualValues(t, 2, num(t, row, "current_step"))
			require.Equal(t, []WorkflowGroup{{Key: "researchers", IDs: []int64{2, 3, 4}}}, st.WorkflowGroups())
			wait := stepAt(t, st, 2).(*WaitForWorkflowsStep)
			require.Equal(t, []int64{2, 3, 4}, wait.ResolveIDs(st))
		}},
		{"seed003_start_agents_group.json", 2, 3, func(t *testing.T, st *State, _ *phpjson.Object) {
			by, step, ok := st.StartedBy()
			require.True(t, ok)
			require.EqualValues(t, 1, by)
			require.EqualValues(t, 1, step)
			task, _ := st.Get("agent_task")
			s, _ := task.AsString()
			require.Equal(t, "competitors", s)
		}},
		{"seed003_wait_all_fails.json", 0, 3, func(t *testing.T, st *State, row *phpjson.Object) {
			require.Equal(t, string(StatusWaitingForWorkflows), str(t, row, "status"))
			wait := stepAt(t, st, 0).(*WaitForWorkflowsStep)
			require.Equal(t, []int64{1, 2}, wait.WorkflowIDs)
			require.Equal(t, WaitAll, wait.Mode)
			require.Equal(t, "deps", wait.ResultKey)
			w, ok := st.Wait()
			require.True(t, ok)
			require.Equal(t, Wait{Type: "workflow", Mode: WaitAll, ResultKey: "deps", WaitingFor: []string{"1", "2"},
				StepName: "wait_for_workflows_0", Raw: w.Raw}, w)
		}},
		{"seed003_wait_all_fails.json", 2, 3, func(t *testing.T, st *State, row *phpjson.Object) {
			require.Equal(t, string(StatusFailed), str(t, row, "status"))
			require.Equal(t, "Workflow wait could not be satisfied.", str(t, row, "error_message"))
			_, waiting := st.Wait()
			require.False(t, waiting)
		}},
		{"seed003_wait_any_from_state.json", 2, 3, func(t *testing.T, st *State, _ *phpjson.Object) {
			wait := stepAt(t, st, 0).(*WaitForWorkflowsStep)
			require.False(t, wait.HasWorkflowIDs)
			require.Equal(t, "dependency_ids", wait.WorkflowIDKey)
			require.Equal(t, WaitAny, wait.Mode)
			require.Equal(t, "winner", wait.ResultKey)
			require.Equal(t, []int64{1, 2}, wait.ResolveIDs(st))
		}},
		{"seed003_wait_for_workflow.json", 0, 2, func(t *testing.T, st *State, _ *phpjson.Object) {
			wait := stepAt(t, st, 0).(*WaitForWorkflowsStep)
			require.Equal(t, "wait_for_workflow", wait.Name)
			require.Equal(t, []int64{1}, wait.WorkflowIDs)
			require.Equal(t, "research", wait.ResultKey)
		}},
		{"seed003_wait_for_workflow.json", 1, 2, func(t *testing.T, st *State, _ *phpjson.Object) {
			w, ok := st.Wait()
			require.True(t, ok)
			require.Equal(t, []string{"1"}, w.WaitingFor)
			require.Equal(t, "research", w.ResultKey)
		}},
		{"seed003_wait_for_workflow.json", 0, 1, func(t *testing.T, st *State, _ *phpjson.Object) {
			fe := stepAt(t, st, 1).(*ForEachStep)
			require.Equal(t, ForEachAll, fe.Mode)
			require.Nil(t, fe.Reducer)
			require.Zero(t, fe.Quorum)
		}},
		{"seed003_wait_quorum.json", 1, 4, func(t *testing.T, st *State, _ *phpjson.Object) {
			wait := stepAt(t, st, 0).(*WaitForWorkflowsStep)
			require.Equal(t, WaitQuorum, wait.Mode)
			require.EqualValues(t, 2, wait.Quorum)
			w, ok := st.Wait()
			require.True(t, ok)
			require.Equal(t, WaitQuorum, w.Mode)
			require.EqualValues(t, 2, w.Quorum)
			require.Equal(t, []string{"1", "2", "3"}, w.WaitingFor)
		}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/snapshot_%d/workflow_%d", c.file, c.snapshot, c.workflow), func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, c.file)
			require.Less(t, c.snapshot, len(f.Snapshots))
			for _, row := range f.Snapshots[c.snapshot].Workflows {
				if num(t, row, "id") == c.workflow {
					c.check(t, parseState(t, str(t, row, "state")), row)
					return
				}
			}
			require.Failf(t, "no workflow", "snapshot %d has no workflow %d", c.snapshot, c.workflow)
		})
	}
}
