package enginetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// thrown is a PHP RuntimeException thrown by a fixture step.
type thrown struct{ msg string }

func (e *thrown) Error() string      { return e.msg }
func (e *thrown) ErrorClass() string { return "RuntimeException" }

// Thrown is the error of a step that throws a RuntimeException with msg.
func Thrown(msg string) error { return &thrown{msg} }

// IntOf is v as an integer (0 when it is none).
func IntOf(v phpjson.Value) int64 {
	n, _ := v.AsInt64()
	return n
}

// Obj builds a PHP array from key, value pairs (values as phpjson.FromGo
// takes them); it panics on a value FromGo rejects.
func Obj(kv ...any) *phpjson.Object {
	o := phpjson.NewObject()
	for i := 0; i < len(kv); i += 2 {
		v, err := phpjson.FromGo(kv[i+1])
		if err != nil {
			panic(err)
		}
		o.Set(kv[i].(string), v)
	}
	return o
}

// FixtureHandlers are the PHP step classes of the recorded scenarios
// (shared/fixtures/README.md), in Go, under the same class names.
func FixtureHandlers(t *testing.T) *workflow.Handlers {
	h := workflow.NewHandlers()
	step := func(name string, fn workflow.StepFunc, meta workflow.HandlerMetadata) {
		require.NoError(t, h.Step(name, fn, meta))
	}
	step("IncStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		n, _ := s.Get("n")
		return Obj("n", IntOf(n)+1), nil
	}, workflow.HandlerMetadata{})
	step("BranchA", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return Obj("a", "from A", "shared", "A"), nil
	}, workflow.HandlerMetadata{})
	step("BranchB", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return Obj("b", 2.5, "shared", "B"), nil
	}, workflow.HandlerMetadata{})
	step("PlanItems", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return Obj("items", []any{"x", "y/z", "ü"}), nil
	}, workflow.HandlerMetadata{})
	step("DraftStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		r, _ := s.Get("round")
		round := IntOf(r) + 1
		return Obj("round", round, "approved", round >= 2), nil
	}, workflow.HandlerMetadata{})
	step("SummaryStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		label, _ := s.Get("label")
		l, _ := label.AsString()
		return Obj("summary", "done "+l), nil
	}, workflow.HandlerMetadata{})
	step("FailingStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return nil, Thrown("step failed on purpose")
	}, workflow.HandlerMetadata{MaxAttempts: 1})
	step("PlanResearchStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return Obj("tasks", []any{map[string]any{"topic": "market"}, map[string]any{"topic": "legal"}}), nil
	}, workflow.HandlerMetadata{})
	step("DraftBriefStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		research, _ := s.Get("research")
		ro, _ := research.AsObject()
		var keys []phpjson.Value
		for _, k := range ro.Keys() {
			keys = append(keys, phpjson.String(k))
		}
		b, err := phpjson.Encode(phpjson.List(keys...))
		return Obj("draft", "brief from "+string(b)), err
	}, workflow.HandlerMetadata{})
	step("PlanTopicsStep", func(context.Context, *workflow.State) (*phpjson.Object, error) {
		return Obj("agent_tasks", []any{"pricing", "competitors", "regulation"}), nil
	}, workflow.HandlerMetadata{})
	step("ResearchTopicStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		task, _ := s.Get("agent_task")
		ts, _ := task.AsString()
		return Obj("finding", "about "+ts), nil
	}, workflow.HandlerMetadata{})
	step("SynthesizeBriefStep", func(_ context.Context, s *workflow.State) (*phpjson.Object, error) {
		results, _ := s.Get("agent_results")
		ro, _ := results.AsObject()
		return Obj("brief_parts", ro.Len()), nil
	}, workflow.HandlerMetadata{})
	require.NoError(t, h.Item("ExecuteResearchTask", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		io, _ := item.AsObject()
		topic, _ := io.Get("topic")
		ts, _ := topic.AsString()
		return Obj("summary", "notes on "+ts), nil
	}, workflow.HandlerMetadata{}))
	require.NoError(t, h.Item("ItemStep", func(_ context.Context, _ *workflow.State, item phpjson.Value, _ int64) (*phpjson.Object, error) {
		s, _ := item.AsString()
		if s == "ü" {
			return nil, Thrown("cannot handle ü")
		}
		return Obj("len", len(s), "item", s), nil
	}, workflow.HandlerMetadata{MaxAttempts: 1}))
	require.NoError(t, h.Reducer("SumReducer", func(_ context.Context, _ *phpjson.Object, agg *phpjson.Object, _ *phpjson.Object) (*phpjson.Object, error) {
		var total int64
		results, _ := agg.Get("results")
		list, _ := results.AsList()
		for _, r := range list {
			ro, _ := r.AsObject()
			out, _ := ro.Get("output")
			oo, _ := out.AsObject()
			l, _ := oo.Get("len")
			total += IntOf(l)
		}
		return Obj("total_len", total), nil
	}))
	return h
}
