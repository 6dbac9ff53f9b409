package queuety

import "context"

// ClassCall is one call of a PHP class's method that is not a job: a
// batch callback, a chain's catch, a state action or guard. The PHP pool
// runs it (phppool.Pool is a ClassCaller).
type ClassCall struct {
	Class  string
	Method string
	// Args is a JSON list (PHP-encoded bytes). An element of the form
	// {"__queuety_arg": kind, ...} is built into a PHP object first:
	// "batch" (a Queuety\Batch from "row"), "job" (a Queuety\Job from
	// "row") or "throwable" (the exception "class" with "message").
	Args []byte
	// FitArity passes only as many leading arguments as the method takes
	// (Worker::call_chain_catch's 0, 1 or 2).
	FitArity bool
	// Optional: a class PHP cannot load, or one without the method, is a
	// successful call that returns null (BatchManager::fire_callback).
	Optional bool
	// Contract, when set, is the interface the instance must implement;
	// MissingMessage and ContractMessage are the errors the plugin throws
	// when the class cannot be loaded or does not implement it.
	Contract        string
	MissingMessage  string
	ContractMessage string
}

// ClassCaller runs ClassCalls, returning the method's return value
// json_encode'd. A PHP exception is an error with ErrorClass and
// ErrorTrace.
type ClassCaller interface {
	CallClass(ctx context.Context, c ClassCall) ([]byte, error)
}

// classCaller is the fallback's ClassCaller (the PHP pool), if any.
func (r *Registry) classCaller() ClassCaller { return fallbackAs[ClassCaller](r) }
