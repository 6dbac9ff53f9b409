package workflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Reserved state keys. Queuety keeps the definition and all runtime
// bookkeeping inside the workflow's state JSON under keys starting with
// "_"; everything else is the public state handlers and callers see.
const (
	// Written at dispatch (builder or definition bundle), in this order.
	KeySteps               = "_steps"
	KeyQueue               = "_queue"
	KeyPriority            = "_priority"
	KeyMaxAttempts         = "_max_attempts"
	KeyDefinitionHash      = "_definition_hash"
	KeyOnCancel            = "_on_cancel"
	KeyPruneStateAfter     = "_prune_state_after"
	KeyStepOutputs         = "_step_outputs"
	KeyDeadlineSeconds     = "_deadline_seconds"
	KeyOnDeadline          = "_on_deadline"
	KeyDefinitionVersion   = "_definition_version"
	KeyIdempotencyKey      = "_idempotency_key"
	KeyWorkflowBudget      = "_workflow_budget"
	KeyWorkflowCounters    = "_workflow_counters"
	KeyCompensateOnFailure = "_compensate_on_failure"
	KeyStartedByWorkflowID = "_started_by_workflow_id"
	KeyStartedByStepIndex  = "_started_by_step_index"

	// Written by the runtime when first needed (appended to the state).
	KeyCompensationStack = "_compensation_stack"
	KeyCompensated       = "_compensated"
	KeyCompensationCause = "_compensation_cause"
	KeyWait              = "_wait"
	KeyWaitingForSignal  = "_waiting_for_signal" // legacy, read only
	KeyForEachSteps      = "_for_each_steps"
	KeyRepeatSteps       = "_repeat_steps"
	KeyWorkflowGroups    = "_workflow_groups"

	// Only in step output, never persisted as such.
	KeyNextStep            = "_next_step"
	KeyWorkflowBudgetDelta = "_workflow_budget_delta"
	KeyQueuetyTrace        = "_queuety_trace"
)

// IsReserved reports whether a state key is hidden from the public state.
func IsReserved(key string) bool { return strings.HasPrefix(key, "_") }

// State is a workflow's state column: an ordered JSON object.
//
// PHP arrays keep insertion order, and that order is part of what is
// stored (and of what max_state_bytes measures), so State keeps every key
// in place, updates keys in place and appends new ones, and encodes back to
// the same bytes when nothing changed. Reserved keys have typed accessors
// (state_settings.go, state_runtime.go); user keys are read and written
// with Get, Set and Delete.
type State struct {
	obj *phpjson.Object
	// src is the column the state was parsed from ("" when built): a step
	// transaction that locks the row and finds it unchanged reuses this
	// state rather than decode it again (Advance.LockStep). Its strings
	// and numbers point into src, so keeping it costs nothing more.
	src string
}

// ParseState decodes a workflows.state column. PHP reads an empty column as
// an empty state, and so does ParseState; a column that is not JSON or not
// a JSON array is an error here (PHP would silently start from an empty
// state and overwrite the row on its next write).
func ParseState(b []byte) (*State, error) {
	return ParseStateString(string(b))
}

// ParseStateString is ParseState for a column read as a string: the state
// shares its memory instead of copying it (a for_each state over 1,000,000
// items is 14 MB).
func ParseStateString(src string) (*State, error) {
	if len(src) == 0 {
		return NewState(nil), nil
	}
	v, err := phpjson.DecodeString(src)
	if err != nil {
		return nil, &corruptStateError{fmt.Errorf("workflow: state is not valid JSON: %w", err)}
	}
	if !phpjson.IsArray(v) {
		return nil, &corruptStateError{fmt.Errorf("workflow: state is a JSON %s, not an object", v.Kind())}
	}
	return &State{obj: phpjson.AsArray(v), src: src}, nil
}

// Reuse returns a state for a transaction that locked a row whose column
// is still src: a copy of s's key list (its values are shared, and, like
// every State, written by replacing a key's value, never in place), so
// what the transaction sets is gone if it rolls back. ok is false when
// the column changed since s was read.
func (s *State) Reuse(column string) (*State, bool) {
	if s == nil || s.src == "" || s.src != column {
		return nil, false
	}
	return &State{obj: phpjson.CloneObject(s.obj), src: s.src}, true
}

// ErrCorruptState matches (errors.Is) the error of a stored state that
// cannot be read: not JSON, nested deeper than PHP's json_decode allows,
// or not an object.
var ErrCorruptState = errors.New("workflow: corrupt state")

// corruptStateError keeps ParseState's message (it reaches error_message
// columns) while matching ErrCorruptState.
type corruptStateError struct{ err error }

func (e *corruptStateError) Error() string   { return e.err.Error() }
func (e *corruptStateError) Unwrap() []error { return []error{ErrCorruptState, e.err} }

// NewState returns a state holding obj (not copied); nil gives an empty one.
func NewState(obj *phpjson.Object) *State {
	if obj == nil {
		obj = phpjson.NewObject()
	}
	return &State{obj: obj}
}

// Object returns the underlying object; changes to it change the state.
func (s *State) Object() *phpjson.Object { return s.obj }

// Encode returns the bytes PHP's json_encode writes for the state.
func (s *State) Encode() ([]byte, error) {
	return phpjson.Encode(phpjson.ObjectValue(s.obj))
}

// Get returns any key, reserved or public.
func (s *State) Get(key string) (phpjson.Value, bool) { return s.obj.Get(key) }

// field is Get without the presence flag: null when missing.
func (s *State) field(key string) phpjson.Value {
	v, _ := s.obj.Get(key)
	return v
}

// Set updates key in place or appends it, as assigning $state[$key] does.
func (s *State) Set(key string, v phpjson.Value) { s.obj.Set(key, v) }

// Delete removes key, keeping the order of the others (PHP's unset).
func (s *State) Delete(key string) bool { return s.obj.Delete(key) }

// Public returns a copy of the public state: the keys that do not start
// with "_", in order. This is what non-step handlers, the status API and
// max_state_bytes see.
func (s *State) Public() *phpjson.Object {
	out := phpjson.NewObject()
	for k, v := range s.obj.All() {
		if !IsReserved(k) {
			out.Set(k, v)
		}
	}
	return out
}

// Steps returns the step list, read as the runtime reads _steps.
func (s *State) Steps() []Step { return ParseSteps(s.field(KeySteps)) }

// Step returns step i of the definition.
func (s *State) Step(i int) (Step, bool) {
	steps := s.Steps()
	if i < 0 || i >= len(steps) {
		return Step{}, false
	}
	return steps[i], true
}
