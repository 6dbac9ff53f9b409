package workflow

import (
	"fmt"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Step is one entry of a workflow's _steps list, kept exactly as stored.
//
// There is no definition column in Queuety: the compiled step list lives in
// the workflow's state, and serialized definitions may carry keys the
// builder never writes (payload, queue, retry, branches, ...). So a Step
// keeps the decoded JSON itself, unknown keys and key order included, and
// re-encodes to the same bytes; the typed views (Definition) and the
// dispatch-option resolver read from it the way the PHP runtime does.
//
// An entry is either an object or, in workflows persisted by old Queuety
// versions, a plain class string: a single step named after its index.
type Step struct {
	v phpjson.Value
}

// ParseStep wraps one decoded _steps entry. Only objects and strings are
// steps; the runtime silently skips anything else (see ParseSteps).
func ParseStep(v phpjson.Value) (Step, error) {
	switch v.Kind() {
	case phpjson.KindString:
		return Step{v: v}, nil
	case phpjson.KindObject:
		return Step{v: v}, nil
	case phpjson.KindList:
		// Still a PHP array to the runtime, with int keys; read it as the
		// object {"0":..} (nothing the builder writes looks like this).
		return Step{v: phpjson.ObjectValue(phpjson.AsArray(v))}, nil
	}
	return Step{}, fmt.Errorf("workflow: a step must be an object or a class string, not %s", v.Kind())
}

// ParseSteps reads a _steps value as Workflow::as_steps does: the values of
// the array in order, keeping objects and strings and dropping anything
// else (which shifts later indexes, as in PHP). A value that is not an
// array yields no steps.
func ParseSteps(v phpjson.Value) []Step {
	vals := phpjson.Values(v)
	steps := make([]Step, 0, len(vals))
	for _, e := range vals {
		if s, err := ParseStep(e); err == nil {
			steps = append(steps, s)
		}
	}
	return steps
}

// Value returns the entry as stored. Objects are shared, not copied.
func (s Step) Value() phpjson.Value { return s.v }

// Object returns the entry's object, or nil for a legacy string step.
func (s Step) Object() *phpjson.Object {
	if s.v.Kind() != phpjson.KindObject {
		return nil
	}
	o, _ := s.v.AsObject()
	return o
}

// IsLegacy reports whether the entry is a plain class string.
func (s Step) IsLegacy() bool { return s.v.Kind() == phpjson.KindString }

// Get returns one key of the entry (nothing for a legacy string step).
func (s Step) Get(key string) (phpjson.Value, bool) {
	o := s.Object()
	if o == nil {
		return phpjson.Null(), false
	}
	return o.Get(key)
}

// field is Get without the presence flag: null when missing.
func (s Step) field(key string) phpjson.Value {
	v, _ := s.Get(key)
	return v
}

// Type is the step type as the runtime dispatches on it
// (resolve_step_type): "single" for legacy strings and for entries without
// a string type. An unknown type string is returned as is; the runtime
// enqueues such a step like a single step.
func (s Step) Type() StepType {
	if s.IsLegacy() {
		return StepSingle
	}
	if t, ok := s.field("type").AsString(); ok {
		return StepType(t)
	}
	return StepSingle
}

// Name returns the step's stable name (resolve_step_name): its non-empty
// string name, else its index.
func (s Step) Name(index int) string {
	if n, ok := s.field("name").AsString(); ok && n != "" {
		return n
	}
	return strconv.Itoa(index)
}

// StoredName returns the name key as stored (current_step_name in the
// status API, which is null for legacy steps and non-string names).
func (s Step) StoredName() (string, bool) {
	return s.field("name").AsString()
}

// HasName reports whether a lookup by name (a _next_step target, a repeat
// target) finds this step at index. Object steps match on a string name
// equal to target; legacy string steps match on their index, since old
// Queuety used the index as the name.
func (s Step) HasName(index int, target string) bool {
	if s.IsLegacy() {
		return strconv.Itoa(index) == target
	}
	n, ok := s.field("name").AsString()
	return ok && n == target
}

// Class is the handler class of a single step (resolve_step_handler): the
// legacy string itself, or a string "class", else "".
func (s Step) Class() string {
	if s.IsLegacy() {
		str, _ := s.v.AsString()
		return str
	}
	c, _ := s.field("class").AsString()
	return c
}

// EventHandler is the handler name the runtime writes to workflow_events
// for this step: the placeholder of an orchestration step, else the class.
func (s Step) EventHandler() string {
	if h, ok := placeholderHandlers[s.Type()]; ok {
		return h
	}
	return s.Class()
}

// Compensation returns the step's compensation handler, if it has one.
func (s Step) Compensation() (HandlerRef, bool) {
	return ParseHandlerRef(s.field("compensation"))
}

// FindStep returns the index of the first step named name, as the runtime
// resolves _next_step and repeat targets (names need not be unique).
func FindStep(steps []Step, name string) (int, bool) {
	for i, s := range steps {
		if s.HasName(i, name) {
			return i, true
		}
	}
	return 0, false
}
