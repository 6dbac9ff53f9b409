package workflow

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

func TestLegacyStringStep(t *testing.T) {
	t.Parallel()
	st := parseState(t, `{"_steps":["First",null,7,"Second"]}`)
	steps := st.Steps()
	require.Len(t, steps, 2, "non-array, non-string entries are skipped, as in PHP")
	s := steps[1]
	require.True(t, s.IsLegacy())
	require.Equal(t, StepSingle, s.Type())
	require.Equal(t, "1", s.Name(1))
	require.True(t, s.HasName(1, "1"))
	require.Equal(t, "Second", s.Class())
	require.Equal(t, "Second", s.EventHandler())
	_, ok := s.StoredName()
	require.False(t, ok)
	def, err := s.Definition()
	require.NoError(t, err)
	require.Equal(t, &SingleStep{Class: "Second", Legacy: true, Payload: phpjson.NewObject()}, def)

	jobs, err := StepJobs(s, 1, st.DispatchDefaults(), nil)
	require.NoError(t, err)
	require.Equal(t, []StepJob{{Handler: "Second", Payload: []byte(`{"__queuety_runtime":{"max_attempts":3}}`),
		Queue: "default", MaxAttempts: 3, StepIndex: 1, CostUnits: 1}}, jobs)
}

func TestStepTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		step string
		typ  StepType
		err  string
	}{
		{step: `{"class":"A"}`, typ: StepSingle},
		{step: `{"type":5,"class":"A"}`, typ: StepSingle},
		{step: `{"type":"custom","class":"A"}`, typ: "custom"},
		{step: `{"type":"for_each","mode":"most"}`, typ: StepForEach, err: `"most" is not a valid for-each mode`},
		{step: `{"type":"repeat","repeat_mode":"sometimes"}`, typ: StepRepeat, err: "Unsupported repeat mode 'sometimes'."},
		{step: `{"type":"start_workflows","name":"s","workflow_definition":{"name":"x"}}`, typ: StepStartWorkflows,
			err: "Start step 's' is missing a valid workflow definition."},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			t.Parallel()
			v, err := phpjson.DecodeString(c.step)
			require.NoError(t, err)
			s, err := ParseStep(v)
			require.NoError(t, err)
			require.Equal(t, c.typ, s.Type())
			_, err = s.Definition()
			if c.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, c.err)
			}
		})
	}
	_, err := ParseStep(phpjson.Int(3))
	require.Error(t, err)
}

func TestForEachAggregateKey(t *testing.T) {
	t.Parallel()
	for step, want := range map[string]string{
		`{"type":"for_each","name":"fan","result_key":" res "}`: "res",
		`{"type":"for_each","name":"fan","result_key":" "}`:     "fan_results",
		`{"type":"for_each"}`:           "4_results",
		`{"type":"for_each","name":""}`: "_results",
	} {
		s, err := ParseStep(phpjson.ObjectValue(decodeObject(t, step)))
		require.NoError(t, err)
		d, err := s.Definition()
		require.NoError(t, err)
		require.Equal(t, want, d.(*ForEachStep).AggregateKey(4), step)
	}
}

func TestWaitForSignalStepReading(t *testing.T) {
	t.Parallel()
	s, err := ParseStep(phpjson.ObjectValue(decodeObject(t,
		`{"type":"wait_for_signal","signal_name":" go ","wait_mode":"sometimes","result_key":" ","decision_map":{"a":"approved"}}`)))
	require.NoError(t, err)
	d, err := s.Definition()
	require.NoError(t, err)
	w := d.(*WaitForSignalStep)
	require.Equal(t, []string{"go"}, w.SignalNames, "without signal_names the single signal_name is used")
	require.Equal(t, WaitAll, w.Mode, "an unknown wait mode reads as all")
	require.Empty(t, w.ResultKey)
	require.Equal(t, []string{"a"}, w.DecisionMap.Keys())
}

func TestWaitForWorkflowsResolveIDs(t *testing.T) {
	t.Parallel()
	state := parseState(t, `{"_workflow_groups":{"g":[5,"6",5,0]},"fallback":[9],"one":"7","ids":[3,-1,"x",3]}`)
	cases := []struct {
		step string
		want []int64
	}{
		{`{"workflow_ids":[2,2,1],"workflow_group_key":"g"}`, []int64{2, 1}},
		{`{"workflow_ids":null,"workflow_group_key":"g"}`, []int64{5, 6}},
		{`{"workflow_group_key":"fallback"}`, []int64{9}},
		{`{"workflow_group_key":"missing","workflow_id_key":"one"}`, nil},
		{`{"workflow_id_key":" one "}`, []int64{7}},
		{`{"workflow_id_key":"ids"}`, []int64{3}},
		{`{"workflow_id_key":"absent"}`, nil},
		{`{}`, nil},
	}
	for _, c := range cases {
		o := decodeObject(t, c.step)
		o.Set("type", phpjson.String(string(StepWaitForWorkflows)))
		s, err := ParseStep(phpjson.ObjectValue(o))
		require.NoError(t, err)
		d, err := s.Definition()
		require.NoError(t, err)
		require.Equal(t, c.want, d.(*WaitForWorkflowsStep).ResolveIDs(state), c.step)
	}
}

// A run_workflow step that does not store the child's settings falls back
// to the parent's, as handle_run_workflow_step does.
func TestRunWorkflowChildDefinitionFallbacks(t *testing.T) {
	t.Parallel()
	parent := parseState(t, `{"n":1,"_steps":[{"type":"run_workflow","workflow_steps":["Inner"]}],`+
		`"_queue":"pq","_priority":2,"_max_attempts":0}`)
	run := stepAt(t, parent, 0).(*RunWorkflowStep)
	def := run.ChildDefinition(parent)
	require.Equal(t, "run_workflow", def.Name)
	require.Equal(t, "pq", def.Queue)
	require.Equal(t, PriorityHigh, def.Priority)
	require.EqualValues(t, 3, def.MaxAttempts)
	d, err := def.Dispatch(parent.Public(), DefinitionDispatchOptions{
		ParentWorkflowID: sql.NullInt64{Int64: 4, Valid: true}, ParentStepIndex: sql.NullInt64{Int64: 0, Valid: true},
	})
	require.NoError(t, err)
	require.Equal(t, `{"n":1,"_steps":["Inner"],"_queue":"pq","_priority":2,"_max_attempts":3}`, string(d.Workflow.State))
	require.Equal(t, "Inner", d.Jobs[0].Handler)
	require.Equal(t, "pq", d.Jobs[0].Queue)
}

func TestDeadlineAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 3, 4, 5, 999, time.FixedZone("X", 3600))
	w := NewWorkflow{DeadlineSeconds: sql.NullInt64{Int64: 90, Valid: true}}
	require.Equal(t, sql.NullString{String: "2026-11-30 02:05:35", Valid: true}, w.DeadlineAt(now))
	require.False(t, NewWorkflow{}.DeadlineAt(now).Valid)
}

func TestDefinitionDispatchIdempotencyKey(t *testing.T) {
	t.Parallel()
	def, err := ParseRuntimeDefinition(phpjson.ObjectValue(decodeObject(t, `{"name":"x","steps":["A"]}`)))
	require.NoError(t, err)
	_, err = def.Dispatch(nil, DefinitionDispatchOptions{IdempotencyKey: " "})
	var be *BuildError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "Workflow idempotency_key cannot be empty.", be.Message)
	require.Equal(t, InvalidArgumentException, be.Class)

	_, err = ParseRuntimeDefinition(phpjson.ObjectValue(decodeObject(t, `{"name":"x"}`)))
	require.Error(t, err)
}
