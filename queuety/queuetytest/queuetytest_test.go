package queuetytest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/queuety/queuetytest"
	"github.com/queuety-go/queuety/workflow"
)

func encode(t *testing.T, o *phpjson.Object) string {
	t.Helper()
	b, err := phpjson.Encode(phpjson.ObjectValue(o))
	require.NoError(t, err)
	return string(b)
}

// A handler sees the job a worker would give it: the payload without the
// reserved keys, the raw bytes with them, the options' queue and attempts.
func TestRunJobGivesTheJobAWorkerWould(t *testing.T) {
	ctx := context.Background()
	reg := queuety.NewRegistry()
	var seen *queuety.Job
	reg.HandleFunc("h", func(ctx context.Context, j *queuety.Job) error {
		seen = j
		return j.Heartbeat(ctx, map[string]any{"at": 1})
	})
	payload := `{"a":1,"__queuety_runtime":{"timeout_seconds":5}}`
	require.NoError(t, queuetytest.RunJob(ctx, reg, "h", []byte(payload), queuety.OnQueue("q"), queuety.MaxAttempts(7), queuety.WithPriority(queuety.PriorityHigh)))
	require.Equal(t, "q", seen.Queue)
	require.Equal(t, 1, seen.Attempt)
	require.Equal(t, 7, seen.MaxAttempts)
	require.Equal(t, queuety.PriorityHigh, seen.Priority)
	require.Equal(t, payload, string(seen.RawPayload))
	b, err := phpjson.Encode(seen.Payload)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))
}

func TestRunJobErrorsAndPanics(t *testing.T) {
	ctx := context.Background()
	reg := queuety.NewRegistry()
	boom := errors.New("boom")
	reg.HandleFunc("fails", func(context.Context, *queuety.Job) error { return boom })
	reg.HandleFunc("panics", func(context.Context, *queuety.Job) error { panic("oops") })
	reg.Register("typed", queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct{ N int }) error { return nil }))

	require.ErrorIs(t, queuetytest.RunJob(ctx, reg, "fails", nil), boom)
	var pe *queuety.PanicError
	require.ErrorAs(t, queuetytest.RunJob(ctx, reg, "panics", nil), &pe)
	require.Equal(t, "oops", pe.Value)
	require.NotEmpty(t, pe.Stack)
	var inv *queuety.InvalidJobError
	require.ErrorAs(t, queuetytest.RunJob(ctx, reg, "typed", map[string]any{"N": "x"}), &inv, "a payload Typed cannot decode buries the job")
	require.ErrorContains(t, queuetytest.RunJob(ctx, reg, "missing", nil), `no Go handler for "missing"`)
	require.ErrorContains(t, queuetytest.RunJob(ctx, reg, "fails", []byte(`[1]`)), "must be a JSON object")

	reg.SetFallback(queuety.HandlerFunc(func(context.Context, *queuety.Job) error { return nil }))
	require.NoError(t, queuetytest.RunJob(ctx, reg, "missing", nil), "the fallback takes names without a handler")
}

// A step gets a copy of the state: what it changes is its output only.
func TestRunStepOnACopyOfTheState(t *testing.T) {
	ctx := context.Background()
	reg := queuety.NewRegistry()
	reg.RegisterStep("S", func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		s.Set("touched", phpjson.Bool(true))
		n, _ := s.Get("n")
		i, _ := n.AsInt64()
		return phpjson.NewObject().Set("double", phpjson.Int(2*i)), nil
	})
	reg.RegisterItemStep("I", func(ctx context.Context, s *workflow.State, item phpjson.Value, index int64) (*phpjson.Object, error) {
		v, _ := item.AsString()
		return phpjson.NewObject().Set("item", phpjson.String(v)).Set("index", phpjson.Int(index)), nil
	})
	reg.RegisterStep("P", func(context.Context, *workflow.State) (*phpjson.Object, error) { panic("step") })
	state := phpjson.NewObject().Set("n", phpjson.Int(21))

	out, err := queuetytest.RunStep(ctx, reg, "S", state)
	require.NoError(t, err)
	require.Equal(t, `{"double":42}`, encode(t, out))
	require.Equal(t, `{"n":21}`, encode(t, state))

	out, err = queuetytest.RunItemStep(ctx, reg, "I", state, phpjson.String("x"), 3)
	require.NoError(t, err)
	require.Equal(t, `{"item":"x","index":3}`, encode(t, out))

	_, err = queuetytest.RunStep(ctx, reg, "P", nil)
	var pe *queuety.PanicError
	require.ErrorAs(t, err, &pe)
	_, err = queuetytest.RunStep(ctx, reg, "missing", nil)
	require.ErrorContains(t, err, `no Go step handler for "missing"`)
	_, err = queuetytest.RunItemStep(ctx, reg, "S", nil, phpjson.Null(), 0)
	require.ErrorContains(t, err, `no Go item handler for "S"`)
}

// The fake checks what the client checks and answers as the client does:
// ids in order, Unique and idempotency keys, the configured failure.
func TestDispatcherRecords(t *testing.T) {
	ctx := context.Background()
	d := queuetytest.NewDispatcher()
	a, err := d.Dispatch(ctx, "A", map[string]any{"x": 1}, queuety.Unique())
	require.NoError(t, err)
	require.Equal(t, queuety.Dispatched{ID: 1}, a)
	again, err := d.Dispatch(ctx, "A", map[string]any{"x": 1}, queuety.Unique())
	require.NoError(t, err)
	require.Equal(t, queuety.Dispatched{ID: 1, Existing: true}, again)
	b, err := d.Dispatch(ctx, "B", nil, queuety.After(a.ID), queuety.ConcurrencyGroup("g", 2))
	require.NoError(t, err)
	require.Equal(t, int64(2), b.ID)

	jobs := d.Jobs()
	require.Len(t, jobs, 2)
	require.Equal(t, "default", jobs[0].Queue)
	require.Equal(t, 3, jobs[0].MaxAttempts)
	var p struct{ X int }
	require.NoError(t, jobs[0].Decode(&p))
	require.Equal(t, 1, p.X)
	require.Equal(t, "[]", string(jobs[1].Row.Payload), "an empty payload is stored as PHP writes it")
	require.NotNil(t, jobs[1].Row.DependsOn)
	require.Equal(t, int64(1), *jobs[1].Row.DependsOn)
	require.Equal(t, "g", jobs[1].Row.ConcurrencyGroup)
	require.Len(t, d.JobsOf("B"), 1)

	_, err = d.Dispatch(ctx, "A", nil, queuety.WithPriority(9))
	require.ErrorContains(t, err, "priority 9")
	_, err = d.Dispatch(ctx, "", nil)
	require.Error(t, err)

	wd, err := workflow.New("w").Then("S").IdempotencyKey("k").Build(phpjson.NewObject())
	require.NoError(t, err)
	id, existing, err := d.DispatchWorkflow(ctx, wd)
	require.NoError(t, err)
	require.Equal(t, int64(1), id)
	require.False(t, existing)
	id, existing, err = d.DispatchWorkflow(ctx, wd)
	require.NoError(t, err)
	require.Equal(t, int64(1), id)
	require.True(t, existing)
	require.Len(t, d.Workflows(), 1)
	require.Equal(t, "w", d.Workflows()[0].Name)

	d.Err = errors.New("database down")
	_, err = d.Dispatch(ctx, "C", nil)
	require.ErrorIs(t, err, d.Err)
	_, _, err = d.DispatchWorkflow(ctx, wd)
	require.ErrorIs(t, err, d.Err)
	require.Len(t, d.Jobs(), 2, "a failed dispatch records nothing")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = d.Dispatch(cancelled, "C", nil)
	require.ErrorIs(t, err, context.Canceled)
}
