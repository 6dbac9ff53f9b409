package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// Builder defines a state machine the way the plugin's
// Queuety::machine() builder does, and writes the same definition bytes
// (StateBuilder::build_runtime_definition, definition_hash
// included). Dispatch it with Client.DispatchMachine. Errors are kept
// until Definition or DispatchMachine reports the first one.
type Builder struct {
	name, initial, current string
	states                 *phpjson.Object
	queue                  string
	priority               workflow.Priority
	maxAttempts            int
	version                *string
	key                    string
	err                    error
}

// NewBuilder starts a machine definition.
func NewBuilder(name string) *Builder {
	return &Builder{name: name, states: phpjson.NewObject(), queue: "default", priority: workflow.PriorityLow, maxAttempts: 3}
}

func (b *Builder) fail(format string, args ...any) *Builder {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
	return b
}

// Initial names the initial state (default: the first state).
func (b *Builder) Initial(state string) *Builder {
	if state = phpjson.Trim(state); state == "" {
		return b.fail("State machine initial state cannot be empty.")
	}
	b.initial = state
	return b
}

// State adds a state (or selects it again) for the Action and On calls
// that follow; terminal is "completed", "failed", "cancelled" or "paused"
// for a terminal state, "" otherwise.
func (b *Builder) State(name, terminal string) *Builder {
	if name = phpjson.Trim(name); name == "" {
		return b.fail("State machine state name cannot be empty.")
	}
	if _, ok := b.states.Get(name); !ok {
		b.states.Set(name, objVal(obj("name", str(name), "action", phpjson.Null(), "action_class", phpjson.Null(),
			"terminal_status", phpjson.Null(), "transitions", phpjson.List())))
	}
	if terminal != "" {
		switch terminal {
		case machineCompleted, machineFailed, machineCancelled, machinePaused:
		default:
			return b.fail("State machine terminal states must resolve to a terminal status.")
		}
		b.stateObj(name).Set("terminal_status", str(terminal))
	}
	if b.initial == "" {
		b.initial = name
	}
	b.current = name
	return b
}

func (b *Builder) stateObj(name string) *phpjson.Object {
	v, _ := b.states.Get(name)
	o, _ := v.AsObject()
	return o
}

// Action sets the current state's entry action class; payload (nil for
// none) is its structured payload.
func (b *Builder) Action(class string, payload map[string]any) *Builder {
	if b.current == "" {
		return b.fail("Call state() before configuring actions or transitions.")
	}
	def, err := handlerDefinition(class, payload, "State machine action")
	if err != nil {
		return b.fail("%v", err)
	}
	s := b.stateObj(b.current)
	s.Set("action", objVal(def))
	s.Set("action_class", str(phpjson.Trim(class)))
	return b
}

// On adds a transition of the current state: event leads to target when
// guard (a StateGuard class, "" for none) allows it; name defaults to the
// event.
func (b *Builder) On(event, target, guard, name string) *Builder {
	if b.current == "" {
		return b.fail("Call state() before configuring actions or transitions.")
	}
	event, target = phpjson.Trim(event), phpjson.Trim(target)
	g, gc := phpjson.Null(), phpjson.Null()
	if guard != "" {
		def, err := handlerDefinition(guard, nil, "State machine guard")
		if err != nil {
			return b.fail("%v", err)
		}
		g, gc = objVal(def), str(phpjson.Trim(guard))
	}
	switch {
	case event == "":
		return b.fail("State machine transition event cannot be empty.")
	case target == "":
		return b.fail("State machine transition target cannot be empty.")
	}
	if name == "" {
		name = event
	}
	s := b.stateObj(b.current)
	ts, _ := get(s, "transitions").AsList()
	s.Set("transitions", phpjson.List(append(ts, objVal(obj("event", str(event), "target_state", str(target),
		"guard", g, "guard_class", gc, "name", str(name))))...))
	return b
}

// OnQueue sets the action jobs' queue (default "default").
func (b *Builder) OnQueue(q string) *Builder {
	if q = phpjson.Trim(q); q == "" {
		return b.fail("State machine queue cannot be empty.")
	}
	b.queue = q
	return b
}

// WithPriority sets the action jobs' priority.
func (b *Builder) WithPriority(p workflow.Priority) *Builder { b.priority = p; return b }

// MaxAttempts sets the action jobs' max_attempts (default 3).
func (b *Builder) MaxAttempts(n int) *Builder {
	if n < 1 {
		return b.fail("State machine max_attempts must be at least 1.")
	}
	b.maxAttempts = n
	return b
}

// Version sets definition_version.
func (b *Builder) Version(v string) *Builder {
	if v = phpjson.Trim(v); v == "" {
		return b.fail("State machine version cannot be empty.")
	}
	b.version = &v
	return b
}

// IdempotencyKey makes DispatchMachine return the machine already holding
// the key instead of starting another.
func (b *Builder) IdempotencyKey(k string) *Builder {
	if k = phpjson.Trim(k); k == "" {
		return b.fail("State machine idempotency key cannot be empty.")
	}
	b.key = k
	return b
}

// Definition is the definition as the plugin stores it: its JSON bytes
// and definition_hash (sha256 of the definition before the hash was
// added).
func (b *Builder) Definition() ([]byte, string, error) {
	d, hash, err := b.definition()
	if err != nil {
		return nil, "", err
	}
	out, err := phpjson.Encode(objVal(d))
	return out, hash, err
}

func (b *Builder) definition() (*phpjson.Object, string, error) {
	if b.err != nil {
		return nil, "", b.err
	}
	if b.states.Len() == 0 {
		return nil, "", errors.New("State machine must define at least one state.")
	}
	if _, ok := b.states.Get(b.initial); !ok {
		return nil, "", errors.New("State machine initial state is missing from the definition.")
	}
	for name, v := range b.states.All() {
		s, _ := v.AsObject()
		if !get(s, "terminal_status").IsNull() && !get(s, "action_class").IsNull() {
			return nil, "", fmt.Errorf("State '%s' cannot be terminal and have an entry action.", name)
		}
		ts, _ := get(s, "transitions").AsList()
		for _, t := range ts {
			to, _ := t.AsObject()
			target, _ := get(to, "target_state").AsString()
			if _, ok := b.states.Get(target); !ok {
				return nil, "", fmt.Errorf("State '%s' references missing transition target '%s'.", name, target)
			}
		}
	}
	d := obj("name", str(b.name), "initial_state", str(b.initial), "states", objVal(cloneObj(b.states)),
		"queue", str(b.queue), "priority", phpjson.Int(int64(b.priority)), "max_attempts", phpjson.Int(int64(b.maxAttempts)),
		"definition_version", strOrNull(b.version))
	raw, err := phpjson.Encode(objVal(d))
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	d.Set("definition_hash", str(hash))
	return d, hash, nil
}

// handlerDefinition is StateBuilder::handler_definition.
func handlerDefinition(class string, payload map[string]any, label string) (*phpjson.Object, error) {
	class = phpjson.Trim(class)
	if class == "" {
		return nil, fmt.Errorf("%s class cannot be empty.", label)
	}
	p := phpjson.NewObject()
	if payload != nil {
		v, err := phpjson.FromGo(payload)
		if err != nil {
			return nil, fmt.Errorf("%s payload: %w", label, err)
		}
		p = asArray(v)
	}
	return obj("class", str(class), "payload", objVal(p)), nil
}
