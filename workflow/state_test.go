package workflow

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

func TestParseState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, out, err string
	}{
		{name: "empty column reads as an empty state", in: "", out: "[]"},
		{name: "empty array", in: "[]", out: "[]"},
		{name: "object round trip", in: `{"b":1,"a":{"x":[]},"_steps":[]}`, out: `{"b":1,"a":{"x":[]},"_steps":[]}`},
		{name: "not JSON", in: "{", err: "state is not valid JSON"},
		{name: "scalar", in: "5", err: "state is a JSON number, not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, err := ParseState([]byte(c.in))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			out, err := st.Encode()
			require.NoError(t, err)
			require.Equal(t, c.out, string(out))
		})
	}
}

// PHP arrays keep insertion order: updates stay in place, new keys go last.
func TestStateKeyOrder(t *testing.T) {
	t.Parallel()
	st := parseState(t, `{"a":1,"_steps":[],"b":2}`)
	st.Set("a", phpjson.Int(3))
	st.Set("c", phpjson.String("new"))
	require.True(t, st.Delete("b"))
	out, err := st.Encode()
	require.NoError(t, err)
	require.Equal(t, `{"a":3,"_steps":[],"c":"new"}`, string(out))
	require.Equal(t, []string{"a", "c"}, st.Public().Keys())
	require.True(t, IsReserved(KeyWait))
	require.False(t, IsReserved("wait"))
}

func TestStateSettings(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		st := NewState(nil)
		require.Equal(t, "default", st.Queue())
		require.Equal(t, PriorityLow, st.Priority())
		require.EqualValues(t, 3, st.MaxAttempts())
		require.Equal(t, DispatchDefaults{Queue: "default", Priority: PriorityLow, MaxAttempts: 3}, st.DispatchDefaults())
		_, ok := st.DefinitionHash()
		require.False(t, ok)
		_, ok = st.DeadlineSeconds()
		require.False(t, ok)
		require.True(t, st.WorkflowBudget().IsZero())
		require.False(t, st.CompensateOnFailure())
		_, _, ok = st.StartedBy()
		require.False(t, ok)
	})
	t.Run("loose values read as PHP reads them", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_queue":"","_priority":"2","_max_attempts":0,"_definition_version":"  ",`+
			`"_idempotency_key":" k ","_deadline_seconds":60,"_compensate_on_failure":1,`+
			`"_workflow_budget":{"max_transitions":"5","max_state_bytes":0,"bogus":1},`+
			`"_workflow_counters":{"transitions":2,"cost_units":"7"}}`)
		require.Equal(t, "default", st.Queue())
		require.Equal(t, PriorityHigh, st.Priority())
		require.EqualValues(t, 3, st.MaxAttempts())
		_, ok := st.DefinitionVersion()
		require.False(t, ok, "a blank version is none")
		key, _ := st.IdempotencyKey()
		require.Equal(t, "k", key)
		secs, ok := st.DeadlineSeconds()
		require.True(t, ok)
		require.EqualValues(t, 60, secs)
		require.True(t, st.CompensateOnFailure())
		require.Equal(t, Budget{MaxTransitions: 5}, st.WorkflowBudget())
		require.Equal(t, Counters{Transitions: 2, CostUnits: 7}, st.WorkflowCounters())
	})
	t.Run("priority outside the enum is low", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, PriorityLow, parseState(t, `{"_priority":7}`).Priority())
	})
	t.Run("handler references", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_on_cancel":"Cleanup","_on_deadline":{"handler":" Late ","config":{"a":1}}}`)
		ref, ok := st.OnCancel()
		require.True(t, ok)
		require.Equal(t, "Cleanup", ref.Class)
		require.Zero(t, ref.Payload.Len())
		ref, ok = st.OnDeadline()
		require.True(t, ok)
		require.Equal(t, "Late", ref.Class)
		require.Equal(t, []string{"a"}, ref.Payload.Keys())
		encoded, err := phpjson.Encode(ref.Value())
		require.NoError(t, err)
		require.Equal(t, `{"class":"Late","payload":{"a":1}}`, string(encoded))

		_, ok = parseState(t, `{"_on_cancel":{"class":"","handler":"H"}}`).OnCancel()
		require.False(t, ok, `a present but empty "class" does not fall back to "handler"`)
	})
	t.Run("pruning needs both keys", func(t *testing.T) {
		t.Parallel()
		_, ok := parseState(t, `{"_prune_state_after":2}`).PruneStateAfter()
		require.False(t, ok)
		st := parseState(t, `{"_prune_state_after":2,"_step_outputs":{"3":["x","y"],"5":[]}}`)
		n, ok := st.PruneStateAfter()
		require.True(t, ok)
		require.EqualValues(t, 2, n)
		require.Equal(t, map[int][]string{3: {"x", "y"}, 5: nil}, st.StepOutputs())
		require.Equal(t, map[int][]string{0: {"a"}}, parseState(t, `{"_step_outputs":[["a"]]}`).StepOutputs())
	})
}

func TestStateRuntimeKeys(t *testing.T) {
	t.Parallel()
	t.Run("for-each runtime of step 0 is stored as a list", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_for_each_steps":[{"initialized":true,"items":["a","b"],"results":[],"failures":[],"winner_index":null}]}`)
		rt, ok := st.ForEachRuntime(0)
		require.True(t, ok)
		require.True(t, rt.Initialized)
		require.Len(t, rt.Items, 2)
		_, ok = st.ForEachRuntime(1)
		require.False(t, ok)
	})
	t.Run("for-each entries are ordered by index", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_for_each_steps":{"2":{"initialized":true,"items":[1,2,3,4],`+
			`"results":{"3":{"index":3,"item":4,"output":{"v":4},"job_id":9},"1":{"index":1,"item":2,"output":[],"job_id":8}},`+
			`"failures":{"0":{"item":1,"error_message":"boom","job_id":7}},"winner_index":3,"settled":true}}}`)
		rt, ok := st.ForEachRuntime(2)
		require.True(t, ok)
		require.Equal(t, []int64{1, 3}, []int64{rt.Results[0].Index, rt.Results[1].Index})
		require.EqualValues(t, 9, rt.Results[1].JobID)
		require.Len(t, rt.Failures, 1)
		require.EqualValues(t, 0, rt.Failures[0].Index, "an entry without index takes its key")
		require.Equal(t, "boom", rt.Failures[0].ErrorMessage)
		require.True(t, rt.HasWinnerIndex)
		require.EqualValues(t, 3, rt.WinnerIndex)
		require.True(t, rt.Settled)
	})
	t.Run("for-each entries with the same index: the later one wins, as in normalize_for_each_entries", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_for_each_steps":[{"initialized":true,"items":[1,2,3],`+
			`"results":{"7":{"index":2,"output":"first","job_id":1},"0":{"index":0,"job_id":2},"9":{"index":2,"output":"later","job_id":3}},`+
			`"failures":[],"winner_index":null}]}`)
		rt, ok := st.ForEachRuntime(0)
		require.True(t, ok)
		require.Equal(t, []int64{0, 2}, []int64{rt.Results[0].Index, rt.Results[1].Index})
		require.EqualValues(t, 3, rt.Results[1].JobID)
		require.Equal(t, phpjson.String("later"), rt.Results[1].Output)
	})
	t.Run("repeat iterations", func(t *testing.T) {
		t.Parallel()
		require.EqualValues(t, 3, parseState(t, `{"_repeat_steps":{"2":{"iterations":3}}}`).RepeatIterations(2))
		require.EqualValues(t, 1, parseState(t, `{"_repeat_steps":[{"iterations":1}]}`).RepeatIterations(0))
		require.Zero(t, parseState(t, `{"_repeat_steps":{"2":{"iterations":-4}}}`).RepeatIterations(2))
	})
	t.Run("legacy signal wait", func(t *testing.T) {
		t.Parallel()
		w, ok := parseState(t, `{"_wait":{"step_index":1},"_waiting_for_signal":"go"}`).Wait()
		require.True(t, ok)
		require.Equal(t, Wait{Type: "wait_for_signal", Mode: WaitAll, WaitingFor: []string{"go"}}, w)
		_, ok = parseState(t, `{"_waiting_for_signal":""}`).Wait()
		require.False(t, ok)
	})
	t.Run("workflow groups keep their order", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_workflow_groups":{"b":[3,"4",3],"a":[]}}`)
		require.Equal(t, []WorkflowGroup{{Key: "b", IDs: []int64{3, 4}}, {Key: "a"}}, st.WorkflowGroups())
	})
	t.Run("compensation", func(t *testing.T) {
		t.Parallel()
		st := parseState(t, `{"_compensation_stack":[{"step_index":0,"handler":"A","payload":[],"state":[]},"junk",`+
			`{"step_index":2,"handler":"B","payload":{"p":1},"state":{"n":1}}],"_compensated":1,"_compensation_cause":"failure"}`)
		stack := st.CompensationStack()
		require.Len(t, stack, 2)
		require.Equal(t, "B", stack[1].Handler)
		require.EqualValues(t, 2, stack[1].StepIndex)
		require.Equal(t, []string{"p"}, stack[1].Payload.Keys())
		cause, ok := st.Compensated()
		require.True(t, ok)
		require.Equal(t, "failure", cause)
	})
}

// TestStateReuseOnlyForTheSameColumn: a step transaction reuses the state
// its job was claimed with only while the row's column is byte for byte
// the one it was parsed from; the reused state shares the decoded values
// (no second decode) but not the key list, so what the transaction sets
// is not seen by the claimed state (nor kept if it rolls back).
func TestStateReuseOnlyForTheSameColumn(t *testing.T) {
	t.Parallel()
	col := `{"items":[1,2,3],"_steps":[]}`
	claimed, err := ParseStateString(col)
	require.NoError(t, err)

	_, ok := claimed.Reuse(`{"items":[1,2,3,4],"_steps":[]}`)
	require.False(t, ok, "the row changed since the claim")
	_, ok = NewState(nil).Reuse("")
	require.False(t, ok, "a built state has no column")
	_, ok = (*State)(nil).Reuse(col)
	require.False(t, ok, "no claimed state")

	s, ok := claimed.Reuse(string([]byte(col)))
	require.True(t, ok)
	a, _ := claimed.field("items").AsList()
	b, _ := s.field("items").AsList()
	require.Same(t, &a[0], &b[0], "the items are not decoded again")
	s.Set("items", phpjson.Int(7))
	s.Set("added", phpjson.Bool(true))
	got, err := claimed.Encode()
	require.NoError(t, err)
	require.Equal(t, col, string(got), "the claimed state is untouched")
}
