package queuety

import (
	"fmt"
	"sort"

	"github.com/queuety-go/queuety/queuety/machine"
)

// machineActionHandler is the handler of a state machine's action jobs
// (StateMachine::enqueue_state_action).
const machineActionHandler = machine.ActionHandler

// RegisterStateAction registers fn as the state action class name. A
// worker claims action jobs when it has a PHP pool or a Go state action;
// an action class it can run neither way is left to PHP workers.
func (r *Registry) RegisterStateAction(name string, fn machine.Action) {
	if name == "" || fn == nil {
		panic("queuety: RegisterStateAction needs a class name and a function")
	}
	r.machines.mu.Lock()
	defer r.machines.mu.Unlock()
	if r.machines.actions == nil {
		r.machines.actions = map[string]machine.Action{}
	}
	if _, dup := r.machines.actions[name]; dup {
		panic(fmt.Sprintf("queuety: state action %q registered twice", name))
	}
	r.machines.actions[name] = fn
}

// RegisterStateGuard registers fn as the transition guard class name.
func (r *Registry) RegisterStateGuard(name string, fn machine.Guard) {
	if name == "" || fn == nil {
		panic("queuety: RegisterStateGuard needs a class name and a function")
	}
	r.machines.mu.Lock()
	defer r.machines.mu.Unlock()
	if r.machines.guards == nil {
		r.machines.guards = map[string]machine.Guard{}
	}
	if _, dup := r.machines.guards[name]; dup {
		panic(fmt.Sprintf("queuety: state guard %q registered twice", name))
	}
	r.machines.guards[name] = fn
}

func (r *Registry) stateAction(name string) (machine.Action, bool) {
	r.machines.mu.RLock()
	defer r.machines.mu.RUnlock()
	fn, ok := r.machines.actions[name]
	return fn, ok
}

func (r *Registry) stateGuard(name string) (machine.Guard, bool) {
	r.machines.mu.RLock()
	defer r.machines.mu.RUnlock()
	fn, ok := r.machines.guards[name]
	return fn, ok
}

// runsMachines reports whether a worker over r claims action jobs.
func (r *Registry) runsMachines() bool {
	if r.classCaller() != nil {
		return true
	}
	r.machines.mu.RLock()
	defer r.machines.mu.RUnlock()
	return len(r.machines.actions) > 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
