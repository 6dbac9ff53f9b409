package machine

import (
	"context"
	"encoding/json"

	"github.com/queuety-go/queuety/workflow"
)

// ActionHandler is the handler of a state machine's action jobs
// (StateMachine::enqueue_state_action).
const ActionHandler = "__queuety_state_machine_action"

// Call is what a state action or guard is given, the arguments of the
// plugin's StateAction::handle / StateGuard::allows as JSON (PHP's
// encoding, key order kept). Event is "" when the state was entered
// without one.
type Call struct {
	MachineID    int64
	StateName    string
	State        json.RawMessage
	Event        string
	EventPayload json.RawMessage
	Payload      json.RawMessage
}

// Action is a Go implementation of a state's action class
// (Queuety\Contracts\StateAction). It returns a JSON object (its string
// keys not starting with "_" are merged into the machine's state; "_event"
// names an event to apply, "_event_payload" its payload) or a JSON string
// (the event to apply). An error fails the action job's attempt.
type Action func(ctx context.Context, call Call) (json.RawMessage, error)

// Guard is a Go implementation of a transition's guard class
// (Queuety\Contracts\StateGuard): the transition is taken when it returns
// true.
type Guard func(ctx context.Context, call Call) (bool, error)

// ClassCall is one call of a PHP action's or guard's method in the pool
// (queuety.ClassCall's fields that a machine sets).
type ClassCall struct {
	Class, Method string
	// Args is a JSON list (PHP-encoded bytes).
	Args []byte
	// Contract is the interface the instance must implement;
	// MissingMessage and ContractMessage are the errors the plugin throws
	// when the class cannot be loaded or does not implement it.
	Contract, MissingMessage, ContractMessage string
}

// ClassCaller runs ClassCalls in the PHP pool, returning the method's
// return value json_encode'd.
type ClassCaller interface {
	CallClass(ctx context.Context, c ClassCall) ([]byte, error)
}

// MetadataSource reads a PHP class's settings (HandlerMetadata::from_class).
type MetadataSource interface {
	HandlerMetadata(class string) workflow.HandlerMetadata
}

// Handlers are what runs a machine's actions and guards: Go functions by
// class name, else PHP classes in the pool.
type Handlers interface {
	Action(class string) (Action, bool)
	Guard(class string) (Guard, bool)
	// ClassCaller is the PHP pool; nil without one.
	ClassCaller() ClassCaller
	// ClassMetadata reads the pool's classes' settings; nil without one.
	ClassMetadata() MetadataSource
}
