package workflow

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// TestBuilderErrors checks every definition the builder refuses. Rows
// with a golden name are refused by the PHP builder too: the message and
// exception class must be the ones PHP threw (testdata/golden.jsonl).
// Rows without one are Go-side checks for what PHP cannot express (a
// fractional duration, an option the PHP method has no parameter for, a
// nil builder) or only finds out at INSERT (more than 255 steps).
func TestBuilderErrors(t *testing.T) {
	t.Parallel()
	child := func() *Builder { return New("c").Then("A") }
	cases := []struct {
		name    string
		golden  string // golden.jsonl case whose PHP exception this must equal
		build   func() *Builder
		initial string
		method  string
		message string // for Go-only errors
	}{
		{name: "no steps", golden: "error_no_steps", method: "dispatch",
			build: func() *Builder { return New("empty") }},
		{name: "initial state over max_state_bytes", golden: "error_state_bytes", method: "dispatch",
			build:   func() *Builder { return New("big").MaxStateBytes(10).Then("StepA") },
			initial: `{"text":"more than ten bytes"}`},
		{name: "repeat without target", golden: "error_repeat_empty_target", method: "repeat_until",
			build: func() *Builder { return New("x").Then("A").RepeatUntil(" ", StateKey("k")) }},
		{name: "repeat with blank state key", golden: "error_repeat_empty_state_key", method: "repeat_until",
			build: func() *Builder { return New("x").Then("A").RepeatUntil("0", StateKey(" ")) }},
		{name: "repeat with blank condition", golden: "error_repeat_empty_condition", method: "repeat_until",
			build: func() *Builder { return New("x").Then("A").RepeatUntil("0", Condition(" ")) }},
		{name: "repeat without condition", golden: "error_repeat_no_condition", method: "repeat_until",
			build: func() *Builder { return New("x").Then("A").RepeatUntil("0") }},
		{name: "repeat with key and condition", golden: "error_repeat_both", method: "repeat_while",
			build: func() *Builder { return New("x").Then("A").RepeatWhile("0", StateKey("k"), Condition("C")) }},
		{name: "repeat max_iterations 0", golden: "error_repeat_max_iterations", method: "repeat_while",
			build: func() *Builder { return New("x").Then("A").RepeatWhile("0", StateKey("k"), MaxIterations(0)) }},
		{name: "repeat target not earlier", golden: "error_repeat_unknown_target", method: "repeat_while",
			build: func() *Builder {
				return New("x").Then("A").RepeatWhile("later", StateKey("k")).Then("B", Named("later"))
			}},
		{name: "signal wait without names", golden: "error_signal_no_names", method: "wait_for_signals",
			build: func() *Builder { return New("x").WaitForSignals([]string{" ", ""}) }},
		{name: "signal wait quorum", golden: "error_signal_quorum", method: "wait_for_signals",
			build: func() *Builder { return New("x").WaitForSignals([]string{"a"}, WaitQuorum) }},
		{name: "workflow quorum without quorum", golden: "error_workflow_quorum_missing", method: "wait_for_workflows",
			build: func() *Builder { return New("x").WaitForWorkflows(WorkflowIDs(1, 2), WaitQuorum) }},
		{name: "workflow quorum 0", golden: "error_workflow_quorum_zero", method: "wait_for_workflows",
			build: func() *Builder { return New("x").WaitForWorkflows(WorkflowIDsFrom("k"), WaitQuorum, Quorum(0)) }},
		{name: "workflow wait blank key", golden: "error_workflow_empty_key", method: "wait_for_workflows",
			build: func() *Builder { return New("x").WaitForWorkflows(WorkflowIDsFrom("  ")) }},
		{name: "group wait blank group", golden: "error_group_empty", method: "wait_for_workflow_group",
			build: func() *Builder { return New("x").WaitForWorkflowGroup(" ") }},
		{name: "agent group quorum without quorum", golden: "error_group_quorum", method: "wait_for_agent_group",
			build: func() *Builder { return New("x").WaitForAgentGroup("team", WaitQuorum) }},
		{name: "start without items key", golden: "error_start_items_key", method: "start_workflows",
			build: func() *Builder { return New("x").StartWorkflows(" ", child()) }},
		{name: "start with blank result key", golden: "error_start_result_key", method: "start_workflows",
			build: func() *Builder { return New("x").StartWorkflows("items", child(), ResultKey(" ")) }},
		{name: "start agents with empty payload key", golden: "error_start_payload_key", method: "start_agents",
			build: func() *Builder { return New("x").StartAgents("items", child(), ResultKey("ids"), PayloadKey("")) }},
		{name: "compensation before any step", golden: "error_compensate_first", method: "compensate_with",
			build: func() *Builder { return New("x").CompensateWith("Undo") }},
		{name: "blank version", golden: "error_version", method: "version",
			build: func() *Builder { return New("x").Version(" ") }},
		{name: "empty idempotency key", golden: "error_idempotency_key", method: "idempotency_key",
			build: func() *Builder { return New("x").IdempotencyKey("") }},
		{name: "max_transitions 0", golden: "error_max_transitions", method: "max_transitions",
			build: func() *Builder { return New("x").MaxTransitions(0) }},
		{name: "max_for_each_items -1", golden: "error_max_for_each_items", method: "max_for_each_items",
			build: func() *Builder { return New("x").MaxForEachItems(-1) }},
		{name: "max_state_bytes 0", golden: "error_max_state_bytes", method: "max_state_bytes",
			build: func() *Builder { return New("x").MaxStateBytes(0) }},
		{name: "max_cost_units 0", golden: "error_max_cost_units", method: "max_cost_units",
			build: func() *Builder { return New("x").MaxCostUnits(0) }},
		{name: "max_started_workflows 0", golden: "error_max_started_workflows", method: "max_started_workflows",
			build: func() *Builder { return New("x").MaxStartedWorkflows(0) }},
		{name: "first error wins, later calls are ignored", golden: "error_version", method: "version",
			build: func() *Builder { return New("x").Version(" ").IdempotencyKey("").Then("A").CompensateWith("B") }},

		// Go-only checks.
		{name: "fractional delay", method: "delay", message: "delay 1.5s is not a whole number of seconds",
			build: func() *Builder { return New("x").Delay(1500 * time.Millisecond) }},
		{name: "fractional deadline", method: "must_complete_within", message: "deadline 1ms is not a whole number of seconds",
			build: func() *Builder { return New("x").MustCompleteWithin(time.Millisecond).Then("A") }},
		{name: "priority outside the enum", method: "with_priority", message: "priority 4 is not one of Queuety's priorities 0-3",
			build: func() *Builder { return New("x").WithPriority(Priority(4)).Then("A") }},
		{name: "wait mode on a single signal wait", method: "wait_for_signal", message: "wait_for_signal() takes no wait mode option",
			build: func() *Builder { return New("x").WaitForSignal("go", WaitAny) }},
		{name: "decision signals on an approval", method: "wait_for_approval", message: "wait_for_approval() takes no DecisionSignals option",
			build: func() *Builder { return New("x").WaitForApproval(DecisionSignals("a", "b")) }},
		{name: "signal name on a decision", method: "wait_for_decision", message: "wait_for_decision() takes no Signal option",
			build: func() *Builder { return New("x").WaitForDecision(Signal("a")) }},
		{name: "quorum on a single workflow wait", method: "wait_for_workflow", message: "wait_for_workflow() takes no Quorum option",
			build: func() *Builder { return New("x").WaitForWorkflow(WorkflowIDs(1), Quorum(1)) }},
		{name: "workflow wait without a source", method: "wait_for_workflows", message: "wait_for_workflows() needs WorkflowIDs(...) or WorkflowIDsFrom(key)",
			build: func() *Builder { return New("x").WaitForWorkflows(WorkflowSource{}) }},
		{name: "run_workflow without a builder", method: "run_workflow", message: `run_workflow("child") needs a sub-workflow builder`,
			build: func() *Builder { return New("x").RunWorkflow("child", nil) }},
		{name: "start without a builder", method: "start_workflows", message: `start_workflows("items") needs a child workflow builder`,
			build: func() *Builder { return New("x").StartWorkflows("items", nil) }},
		{name: "expected value Go cannot encode", method: "repeat_until", message: "phpjson: cannot convert chan int to a Value",
			build: func() *Builder { return New("x").Then("A").RepeatUntil("0", StateKey("k"), Expected(make(chan int))) }},
		{name: "more than 255 steps", method: "dispatch", message: "a workflow has at most 255 steps, this one has 256",
			build: func() *Builder {
				b := New("long")
				for range 256 {
					b.Then("A")
				}
				return b
			}},
	}
	golden := loadGolden(t)
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.golden] = true
	}
	for name, g := range golden {
		if g.Kind == "error" {
			require.True(t, covered[name], "golden error case %s has no row here", name)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var initial *phpjson.Object
			if c.initial != "" {
				initial = decodeObject(t, c.initial)
			}
			_, err := c.build().Build(initial)
			var be *BuildError
			require.True(t, errors.As(err, &be), "want a *BuildError, got %v", err)
			require.Equal(t, c.method, be.Method)
			if c.golden == "" {
				require.Equal(t, c.message, be.Message)
				require.Empty(t, be.Class, "Go-only errors have no PHP exception class")
				return
			}
			g := golden[c.golden]
			require.Equal(t, "error", g.Kind)
			require.Equal(t, str(t, g.Line, "message"), be.Message)
			require.Equal(t, str(t, g.Line, "class"), be.Class)
		})
	}
}

// TestBuilderChildErrors: a sub-builder's error surfaces from the parent.
func TestBuilderChildErrors(t *testing.T) {
	t.Parallel()
	broken := func() *Builder { return New("c").Version(" ") }

	_, err := New("p").StartWorkflows("items", broken()).Build(nil)
	var be *BuildError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "Workflow version cannot be empty.", be.Message)
	require.Contains(t, err.Error(), `start_workflows: child workflow "c"`)

	_, err = New("p").RunWorkflow("c", broken()).Build(nil)
	require.ErrorAs(t, err, &be)
	require.Equal(t, "version", be.Method)
}
