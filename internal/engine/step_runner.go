package engine

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// StepRunner runs the steps whose class has no Go handler: the PHP
// handler pool (queuety/internal/phppool) implements it. It is the
// engine's plug-in, not the user's API: the engine calls it with the step
// job's row, and the composition root finds it on the registry's fallback
// handler (queuety.Registry.SetFallback). State is the full workflow state
// (reserved "_" keys included) and item a for_each item, both
// json_encode'd (phpjson); the output is the JSON object the PHP Step or
// ForEachHandler returned ("[]" for an empty array).
//
// Its methods are named after the PHP calls they make, Step::handle and
// ForEachHandler::handle_item, so they are not taken for the engine's own
// RunStep, which runs a whole claimed step job around them.
type StepRunner interface {
	// HandleStep calls the job's Step class: handle(state).
	HandleStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error)
	// HandleItem calls the job's ForEachHandler class on a for_each
	// branch's item: handle_item(state, item, index).
	HandleItem(ctx context.Context, job *store.JobRow, state []byte, item []byte, index int64) ([]byte, error)
}

// CallableRunner runs a workflow's PHP callables that have no Go
// implementation: for_each reducers (ForEachReducer::reduce), repeat
// conditions (RepeatCondition::matches) and compensations, on_cancel and
// on_deadline handlers (Compensation::handle). A StepRunner that also
// implements it (the PHP pool does) is the engine's fallback for them, as
// it is for steps. Every argument is json_encode'd (phpjson): state is the
// public state (for a reducer with the aggregate under its result key),
// payload the structured handler's payload ("[]" for a plain class, which
// PHP then calls without it, as the plugin does).
type CallableRunner interface {
	// RunReducer returns the array the reducer returned, json_encode'd.
	RunReducer(ctx context.Context, class string, state, aggregate, payload []byte) ([]byte, error)
	// RunCondition returns what matches() returned.
	RunCondition(ctx context.Context, class string, state, payload []byte) (bool, error)
	// RunCompensation calls handle(); a class PHP does not know is
	// skipped without an error, as the plugin skips it.
	RunCompensation(ctx context.Context, class string, state, payload []byte) error
}

// StepRunner returns the fallback step runner, or nil.
func (e *Engine) StepRunner() StepRunner { return e.runner }

// runFallback runs a step in the step runner: the for_each branch's item
// handler for a branch of a for_each step, else the step.
func (e *Engine) runFallback(ctx context.Context, job *store.JobRow, state *workflow.State, index int) (*phpjson.Object, error) {
	stateJSON, err := encodeObject(state.Object())
	if err != nil {
		return nil, fmt.Errorf("encoding the state of workflow %d for step %s: %w", job.WorkflowID.Int64, job.Handler, err)
	}
	var out []byte
	if step, ok := state.Step(index); ok {
		if item, isBranch := e.stepItem(step, job.Payload); isBranch {
			itemJSON, err := phpjson.Encode(item.Item)
			if err != nil {
				return nil, fmt.Errorf("encoding the item of step %s: %w", job.Handler, err)
			}
			out, err = e.runner.HandleItem(ctx, job, stateJSON, itemJSON, item.Index)
			if err != nil {
				return nil, err
			}
			return decodeStepOutput(job.Handler, out)
		}
	}
	if out, err = e.runner.HandleStep(ctx, job, stateJSON); err != nil {
		return nil, err
	}
	return decodeStepOutput(job.Handler, out)
}

// decodeStepOutput reads a PHP step's returned array: an object, a list
// (integer keys, as PHP's array has) or nothing.
func decodeStepOutput(handler string, b []byte) (*phpjson.Object, error) {
	if len(b) == 0 {
		return phpjson.NewObject(), nil
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("the output of step %s: %w", handler, err)
	}
	if v.IsNull() {
		return phpjson.NewObject(), nil
	}
	if !phpjson.IsArray(v) {
		return nil, runtimeErrorf("Step %s returned %s, not an array.", handler, v.Kind())
	}
	return phpjson.AsArray(v), nil
}

// callables returns the step runner as a CallableRunner, or nil.
func (e *Engine) callables() CallableRunner {
	cr, _ := e.runner.(CallableRunner)
	return cr
}

func encodeArgs(objs ...*phpjson.Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	for i, o := range objs {
		if o == nil {
			o = phpjson.NewObject()
		}
		b, err := encodeObject(o)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// lookupReducer returns the Go reducer of a class, else one calling the
// CallableRunner.
func (e *Engine) lookupReducer(class string) (workflow.ReducerFunc, bool) {
	if fn, ok := e.handlers.LookupReducer(class); ok {
		return fn, true
	}
	cr := e.callables()
	if cr == nil {
		return nil, false
	}
	return func(ctx context.Context, state, aggregate, payload *phpjson.Object) (*phpjson.Object, error) {
		args, err := encodeArgs(state, aggregate, payload)
		if err != nil {
			return nil, fmt.Errorf("encoding the arguments of reducer %s: %w", class, err)
		}
		out, err := cr.RunReducer(ctx, class, args[0], args[1], args[2])
		if err != nil {
			return nil, err
		}
		return decodeStepOutput(class, out)
	}, true
}

// lookupCondition returns the Go repeat condition of a class, else one
// calling the CallableRunner.
func (e *Engine) lookupCondition(class string) (workflow.ConditionFunc, bool) {
	if fn, ok := e.handlers.LookupCondition(class); ok {
		return fn, true
	}
	cr := e.callables()
	if cr == nil {
		return nil, false
	}
	return func(ctx context.Context, state, payload *phpjson.Object) (bool, error) {
		args, err := encodeArgs(state, payload)
		if err != nil {
			return false, fmt.Errorf("encoding the arguments of condition %s: %w", class, err)
		}
		return cr.RunCondition(ctx, class, args[0], args[1])
	}, true
}

// lookupCompensation returns the Go compensation (or on_cancel /
// on_deadline handler) of a class, else one calling the CallableRunner.
func (e *Engine) lookupCompensation(class string) (workflow.CompensationFunc, bool) {
	if fn, ok := e.handlers.LookupCompensation(class); ok {
		return fn, true
	}
	cr := e.callables()
	if cr == nil {
		return nil, false
	}
	return func(ctx context.Context, state, payload *phpjson.Object) error {
		args, err := encodeArgs(state, payload)
		if err != nil {
			return fmt.Errorf("encoding the arguments of compensation %s: %w", class, err)
		}
		return cr.RunCompensation(ctx, class, args[0], args[1])
	}, true
}
