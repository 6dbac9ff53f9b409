package workflow

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// StepFunc is a Go step handler: it receives the FULL workflow state (with
// the reserved "_" keys, as PHP's Step::handle does) and returns the output
// to merge, keys in order. A nil output is an empty one. Public output keys
// overwrite state keys; "_next_step" jumps to a named step; other "_" keys
// are dropped (spec §3.3).
type StepFunc func(ctx context.Context, state *State) (*phpjson.Object, error)

// ItemFunc handles one item of a for_each step (PHP's
// ForEachHandler::handle_item). A for_each step whose class has only a
// StepFunc runs that instead, without the item.
type ItemFunc func(ctx context.Context, state *State, item phpjson.Value, index int64) (*phpjson.Object, error)

// ReducerFunc folds a settled for_each aggregate into extra output
// (ForEachReducer::reduce). state is the public state with the aggregate
// already under the result key; payload is the structured reducer's
// payload (empty for a plain class). Its output is merged over
// {result_key: aggregate}.
type ReducerFunc func(ctx context.Context, state *phpjson.Object, aggregate *phpjson.Object, payload *phpjson.Object) (*phpjson.Object, error)

// ConditionFunc decides a repeat step (RepeatCondition::matches) from the
// public state.
type ConditionFunc func(ctx context.Context, state *phpjson.Object, payload *phpjson.Object) (bool, error)

// CompensationFunc undoes a settled step (PHP's Compensation::handle): it
// receives the public state snapshot taken right after the step settled
// and the structured handler's payload. Errors are logged and ignored.
type CompensationFunc func(ctx context.Context, state *phpjson.Object, payload *phpjson.Object) error

// Handlers holds the Go step handlers by the class name the step
// definitions carry, so a Go handler registered under "IncStep" runs the
// steps a PHP builder wrote as ->then(IncStep::class). It also supplies the
// handler metadata (max attempts, queue, ...) that PHP reads from class
// attributes. Safe for concurrent use.
type Handlers struct {
	mu         sync.RWMutex
	steps      map[string]StepFunc
	items      map[string]ItemFunc
	reducers   map[string]ReducerFunc
	conditions map[string]ConditionFunc
	comps      map[string]CompensationFunc
	meta       map[string]HandlerMetadata
}

// NewHandlers returns an empty set.
func NewHandlers() *Handlers {
	return &Handlers{
		steps: map[string]StepFunc{}, items: map[string]ItemFunc{},
		reducers: map[string]ReducerFunc{}, conditions: map[string]ConditionFunc{},
		comps: map[string]CompensationFunc{},
		meta:  map[string]HandlerMetadata{},
	}
}

func (h *Handlers) add(kind, name string, taken bool, set func()) error {
	if name == "" {
		return fmt.Errorf("workflow: a %s handler needs a name (the PHP class name its steps use)", kind)
	}
	if IsPlaceholderHandler(name) {
		return fmt.Errorf("workflow: %q is a reserved placeholder name", name)
	}
	if taken {
		return fmt.Errorf("workflow: %s handler %q registered twice", kind, name)
	}
	set()
	return nil
}

// Step registers a step handler under a class name, with the metadata the
// PHP class's attributes would give (zero: none).
func (h *Handlers) Step(name string, fn StepFunc, meta HandlerMetadata) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, taken := h.steps[name]
	return h.add("step", name, taken, func() { h.steps[name], h.meta[name] = fn, meta })
}

// Item registers a for_each item handler under a class name.
func (h *Handlers) Item(name string, fn ItemFunc, meta HandlerMetadata) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, taken := h.items[name]
	return h.add("item", name, taken, func() { h.items[name], h.meta[name] = fn, meta })
}

// Reducer registers a for_each reducer under a class name.
func (h *Handlers) Reducer(name string, fn ReducerFunc) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, taken := h.reducers[name]
	return h.add("reducer", name, taken, func() { h.reducers[name] = fn })
}

// Condition registers a repeat condition under a class name.
func (h *Handlers) Condition(name string, fn ConditionFunc) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, taken := h.conditions[name]
	return h.add("condition", name, taken, func() { h.conditions[name] = fn })
}

// Compensation registers a compensation handler under a class name.
func (h *Handlers) Compensation(name string, fn CompensationFunc) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, taken := h.comps[name]
	return h.add("compensation", name, taken, func() { h.comps[name] = fn })
}

// LookupCompensation returns a compensation handler.
func (h *Handlers) LookupCompensation(name string) (CompensationFunc, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	fn, ok := h.comps[name]
	return fn, ok
}

// HandlerMetadata implements HandlerMetadataSource.
func (h *Handlers) HandlerMetadata(name string) HandlerMetadata {
	if h == nil {
		return HandlerMetadata{}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.meta[name]
}

// Registered reports whether name is a Go step or item handler (their
// registered metadata, even empty, is the class's).
func (h *Handlers) Registered(name string) bool {
	if h == nil {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.meta[name]
	return ok
}

// LookupStep returns the step handler of a class.
func (h *Handlers) LookupStep(name string) (StepFunc, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	fn, ok := h.steps[name]
	return fn, ok
}

// LookupItem returns the for_each item handler of a class.
func (h *Handlers) LookupItem(name string) (ItemFunc, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	fn, ok := h.items[name]
	return fn, ok
}

// LookupReducer returns a reducer.
func (h *Handlers) LookupReducer(name string) (ReducerFunc, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	fn, ok := h.reducers[name]
	return fn, ok
}

// LookupCondition returns a repeat condition.
func (h *Handlers) LookupCondition(name string) (ConditionFunc, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	fn, ok := h.conditions[name]
	return fn, ok
}

// Names returns the class names with a step or item handler, sorted: the
// job handlers a worker with these handlers can run.
func (h *Handlers) Names() []string {
	if h == nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for n := range h.steps {
		out = append(out, n)
	}
	for n := range h.items {
		if _, dup := h.steps[n]; !dup {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
