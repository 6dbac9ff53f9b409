package workflow

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// StepRunner runs the steps whose class has no Go handler: the PHP
// handler pool (internal/phppool) implements it. State is the full
// workflow state (reserved "_" keys included) and item a for_each item,
// both json_encode'd (phpjson); the output is the JSON object the PHP
// Step or ForEachHandler returned ("[]" for an empty array).
type StepRunner interface {
	RunStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error)
	RunItem(ctx context.Context, job *store.JobRow, state []byte, item []byte, index int64) ([]byte, error)
}

// SetStepRunner routes the steps without a Go handler to r; the engine
// then supports every step handler (Supports). Set it before the engine
// runs jobs.
func (e *Engine) SetStepRunner(r StepRunner) { e.runner = r }

// StepRunner returns the fallback step runner, or nil.
func (e *Engine) StepRunner() StepRunner { return e.runner }

// runFallback runs a step in the step runner: the for_each branch's item
// handler for a branch of a for_each step, else the step.
func (e *Engine) runFallback(ctx context.Context, job *store.JobRow, state *State, index int) (*phpjson.Object, error) {
	stateJSON, err := encodeObject(state.Object())
	if err != nil {
		return nil, fmt.Errorf("encoding the state of workflow %d for step %s: %w", job.WorkflowID.Int64, job.Handler, err)
	}
	var out []byte
	if step, ok := state.Step(index); ok && step.Type() == StepForEach {
		if item, itemIndex, isBranch := forEachBranchMeta(job.Payload); isBranch {
			itemJSON, err := phpjson.Encode(item)
			if err != nil {
				return nil, fmt.Errorf("encoding the item of step %s: %w", job.Handler, err)
			}
			out, err = e.runner.RunItem(ctx, job, stateJSON, itemJSON, itemIndex)
			if err != nil {
				return nil, err
			}
			return decodeStepOutput(job.Handler, out)
		}
	}
	if out, err = e.runner.RunStep(ctx, job, stateJSON); err != nil {
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
	if !isArray(v) {
		return nil, runtimeErrorf("Step %s returned %s, not an array.", handler, v.Kind())
	}
	return phpArray(v), nil
}
