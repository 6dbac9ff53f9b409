package workflow

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Step definitions come from workflow state and definition bundles any PHP
// or HTTP client may have written, so their parsers must refuse, never
// panic, on anything phpjson decodes. The seeds are the golden PHP
// definitions and step lists.
//
//	go test ./workflow -run '^$' -fuzz '^FuzzParseSteps$' -fuzztime 60s

// fuzzSeeds returns the golden cases' definition bundles and _steps lists
// (and their entries), encoded.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	fh, err := os.Open(filepath.Join("testdata", "golden.jsonl"))
	require.NoError(f, err)
	defer fh.Close()
	var seeds [][]byte
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var c struct {
			Definition *string `json:"definition"`
			Workflow   *struct {
				State string `json:"state"`
			} `json:"workflow"`
		}
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			continue
		}
		if c.Definition != nil {
			seeds = append(seeds, []byte(*c.Definition))
		}
		if c.Workflow != nil {
			var st struct {
				Steps []json.RawMessage `json:"_steps"`
			}
			if json.Unmarshal([]byte(c.Workflow.State), &st) == nil && st.Steps != nil {
				all, _ := json.Marshal(st.Steps)
				seeds = append(seeds, all)
				for _, s := range st.Steps {
					seeds = append(seeds, s)
				}
			}
		}
	}
	require.NoError(f, sc.Err())
	require.NotEmpty(f, seeds)
	return append(seeds,
		[]byte(`"LegacyClass"`), []byte(`["First",null,7,"Second"]`), []byte(`[[1,2],{"0":"x"}]`),
		[]byte(`{"class":"  ","handler":"H","payload":[1]}`), []byte(`{"handler":"H","config":{"a":1}}`),
		[]byte(`{"steps":[],"max_attempts":"-4","prune_after":"1e3","workflow_budget":{"max_steps":"7"}}`),
		[]byte(`{"type":"for_each","items_key":7,"handler":[],"mode":"quorum","quorum":-1}`),
		[]byte(`{"type":"parallel","handlers":[[],{"class":1},"A"]}`),
		[]byte(`{"type":"repeat","condition":{"class":"C"},"max_iterations":"x"}`),
		[]byte(`{"type":"wait_for_workflows","workflow_ids":[1,"2",null],"mode":"quorum","quorum":"3"}`),
		[]byte(`{"type":"local_activity","class":"A","options":{"max_attempts":1000,"backoff":["x"]}}`),
	)
}

// exercise reads every typed view of a step: none may panic, whatever the
// entry holds.
func exercise(t *testing.T, s Step, index int) {
	t.Helper()
	_ = s.Type()
	_ = s.Name(index)
	_, _ = s.StoredName()
	_ = s.Class()
	_ = s.EventHandler()
	if ref, ok := s.Compensation(); ok {
		require.NotEmpty(t, ref.Class)
	}
	_, _ = s.Definition()
	// A step is kept as stored: it encodes, and re-parses to the same bytes.
	b, err := phpjson.Encode(s.Value())
	require.NoError(t, err)
	v, err := phpjson.Decode(b)
	require.NoError(t, err)
	again, err := ParseStep(v)
	require.NoError(t, err, "a parsed step %s does not parse again", b)
	b2, err := phpjson.Encode(again.Value())
	require.NoError(t, err)
	require.Equal(t, string(b), string(b2))
}

// fuzzValues fuzzes fn with every input that decodes as PHP JSON, seeded
// with the golden builder outputs.
func fuzzValues(f *testing.F, fn func(t *testing.T, v phpjson.Value)) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := phpjson.Decode(data); err == nil {
			fn(t, v)
		}
	})
}

func FuzzParseStep(f *testing.F) {
	fuzzValues(f, func(t *testing.T, v phpjson.Value) {
		s, err := ParseStep(v)
		switch v.Kind() {
		case phpjson.KindString, phpjson.KindObject, phpjson.KindList:
			require.NoError(t, err, "a string, object or list is a step")
		default:
			require.Error(t, err, "%s is not a step", v.Kind())
			return
		}
		if v.Kind() != phpjson.KindList {
			// Strings and objects are kept byte for byte.
			want, err := phpjson.Encode(v)
			require.NoError(t, err)
			got, err := phpjson.Encode(s.Value())
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
		exercise(t, s, 0)
	})
}

func FuzzParseSteps(f *testing.F) {
	fuzzValues(f, func(t *testing.T, v phpjson.Value) {
		steps := ParseSteps(v)
		if !phpjson.IsArray(v) {
			require.Empty(t, steps, "a value that is not an array has no steps")
		}
		require.LessOrEqual(t, len(steps), len(phpjson.Values(v)))
		for i, s := range steps {
			k := s.Value().Kind()
			require.True(t, k == phpjson.KindString || k == phpjson.KindObject, "step %d is a %s", i, k)
			exercise(t, s, i)
		}
	})
}

func FuzzParseHandlerRef(f *testing.F) {
	fuzzValues(f, func(t *testing.T, v phpjson.Value) {
		ref, ok := ParseHandlerRef(v)
		if !ok {
			return
		}
		require.NotEmpty(t, ref.Class)
		require.Equal(t, phpjson.Trim(ref.Class), ref.Class, "the class is trimmed")
		require.NotNil(t, ref.Payload)
		// The structured form the bundle path persists reads back the same.
		back, ok := ParseHandlerRef(ref.Value())
		require.True(t, ok)
		require.Equal(t, ref.Class, back.Class)
		a, err := phpjson.Encode(phpjson.ObjectValue(ref.Payload))
		require.NoError(t, err)
		b, err := phpjson.Encode(phpjson.ObjectValue(back.Payload))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	})
}

func FuzzParseRuntimeDefinition(f *testing.F) {
	fuzzValues(f, func(t *testing.T, v phpjson.Value) {
		d, err := ParseRuntimeDefinition(v)
		if err != nil {
			return
		}
		require.NotEmpty(t, d.Name)
		require.NotEmpty(t, d.Queue)
		require.GreaterOrEqual(t, d.MaxAttempts, int64(1))
		require.GreaterOrEqual(t, d.PruneAfter, int64(0))
		require.GreaterOrEqual(t, d.DeadlineSeconds, int64(0))
		for _, ref := range []*HandlerRef{d.CancelHandler, d.DeadlineHandler} {
			if ref != nil {
				require.NotEmpty(t, ref.Class)
				require.NotNil(t, ref.Payload)
			}
		}
		for i, s := range d.Steps {
			exercise(t, s, i)
		}
	})
}

// FuzzParseState: a workflows.state column is whatever PHP (or anyone with
// the database) wrote. ParseState refuses what is not a JSON array; what it
// accepts encodes to a fixed point (parse, encode, parse, encode gives the
// same bytes) and every typed reader of the reserved keys answers without
// panicking.
func FuzzParseState(f *testing.F) {
	fh, err := os.Open(filepath.Join("testdata", "golden.jsonl"))
	require.NoError(f, err)
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var c struct {
			Workflow *struct {
				State string `json:"state"`
			} `json:"workflow"`
		}
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Workflow != nil && len(c.Workflow.State) < 8192 {
			f.Add([]byte(c.Workflow.State))
		}
	}
	require.NoError(f, sc.Err())
	fh.Close()
	for _, s := range []string{``, `[]`, `{}`, `7`, `"s"`, `[1,2]`,
		`{"_steps":"x","_queue":7,"_priority":"9","_max_attempts":-3,"_wait":{"type":"signal"},"_compensation_stack":[1,{}]}`,
		`{"_deadline_seconds":"1e400","_prune_state_after":-1,"_step_outputs":{"0":["a",1]},"_workflow_budget":{"max_steps":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			require.Nil(t, st)
			return
		}
		b, err := st.Encode()
		require.NoError(t, err)
		again, err := ParseState(b)
		require.NoError(t, err, "encoded state %s does not parse", b)
		b2, err := again.Encode()
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2))
		for i, s := range st.Steps() {
			exercise(t, s, i)
			_, _ = st.ForEachRuntime(i)
			require.GreaterOrEqual(t, st.RepeatIterations(i), int64(0))
		}
		_ = st.DispatchDefaults()
		_ = st.Public()
		_, _ = st.Wait()
		_ = st.WorkflowGroups()
		_ = st.CompensationStack()
		_, _ = st.Compensated()
		require.NotEmpty(t, st.Queue())
		_ = st.Priority()
		require.GreaterOrEqual(t, st.MaxAttempts(), int64(1))
		_, _ = st.OnCancel()
		_, _ = st.OnDeadline()
		_, _ = st.DeadlineSeconds()
		_, _ = st.PruneStateAfter()
		_ = st.StepOutputs()
		_ = st.WorkflowBudget()
		_ = st.WorkflowCounters()
		_ = st.CompensateOnFailure()
		_, _, _ = st.StartedBy()
	})
}
