package workflow

import (
	"context"

	store "github.com/queuety-go/queuety/sql"
)

// StepRunner runs the steps whose class has no Go handler: the PHP
// handler pool (queuety/internal/phppool) implements it. State is the full
// workflow state (reserved "_" keys included) and item a for_each item,
// both json_encode'd (phpjson); the output is the JSON object the PHP
// Step or ForEachHandler returned ("[]" for an empty array).
type StepRunner interface {
	RunStep(ctx context.Context, job *store.JobRow, state []byte) ([]byte, error)
	RunItem(ctx context.Context, job *store.JobRow, state []byte, item []byte, index int64) ([]byte, error)
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
