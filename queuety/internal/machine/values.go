package machine

import (
	"database/sql"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// PHP-array helpers for the state machine runtime: the plugin handles
// states, definitions and payloads as PHP arrays (copied on assignment,
// keys as strings), which phpjson objects are, shared by reference.

// asArray is StateMachine::as_array: an array (a JSON object or list) as
// a fresh object, anything else as the empty array.
func asArray(v phpjson.Value) *phpjson.Object { return phpjson.CloneObject(phpjson.AsArray(v)) }

func isArray(v phpjson.Value) bool { return phpjson.IsArray(v) }

func cloneObj(o *phpjson.Object) *phpjson.Object { return asArray(phpjson.ObjectValue(o)) }

func objVal(o *phpjson.Object) phpjson.Value { return phpjson.ObjectValue(o) }

// obj builds an object from key, value pairs, in order.
func obj(kv ...any) *phpjson.Object {
	o := phpjson.NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1].(phpjson.Value))
	}
	return o
}

func str(s string) phpjson.Value { return phpjson.String(s) }

// strOrNull is a ?string.
func strOrNull(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Null()
	}
	return phpjson.String(*s)
}

// scalarString is `is_scalar($v) ? (string) $v : $def`.
func scalarString(v phpjson.Value, def string) string {
	if !phpjson.IsScalar(v) {
		return def
	}
	return phpjson.ToString(v)
}

// phpInt is `is_scalar($v) ? (int) $v : $def`.
func phpInt(v phpjson.Value, def int64) int64 {
	if !phpjson.IsScalar(v) {
		return def
	}
	return phpjson.ToInt(v)
}

// get is $o[$key] ?? null.
func get(o *phpjson.Object, key string) phpjson.Value { return phpjson.Get(o, key) }

// enc is json_encode of an array, as the event log stores it.
func enc(o *phpjson.Object) sql.NullString {
	if o == nil {
		return sql.NullString{}
	}
	b, err := phpjson.Encode(objVal(o))
	if err != nil {
		return sql.NullString{}
	}
	return store.String(string(b))
}

// encV is json_encode of any value (NULL for null).
func encV(v phpjson.Value) sql.NullString {
	if v.IsNull() {
		return sql.NullString{}
	}
	b, err := phpjson.Encode(v)
	if err != nil {
		return sql.NullString{}
	}
	return store.String(string(b))
}

func encString(o *phpjson.Object) string {
	b, _ := phpjson.Encode(objVal(o))
	return string(b)
}

func nullStr(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return store.String(*s)
}

// handlerDef is a normalized action or guard definition.
type handlerDef struct {
	class   string
	payload *phpjson.Object
}

// normalizeHandlerDef is StateMachine::normalize_handler_definition.
func normalizeHandlerDef(v phpjson.Value) *handlerDef {
	if s, ok := v.AsString(); ok {
		if s = phpjson.Trim(s); s != "" {
			return &handlerDef{class: s, payload: phpjson.NewObject()}
		}
		return nil
	}
	o, ok := v.AsObject()
	if !ok {
		return nil
	}
	c, _ := get(o, "class").AsString()
	if c = phpjson.Trim(c); c == "" {
		return nil
	}
	p, ok := o.Get("payload")
	if !ok || p.IsNull() {
		p = get(o, "config")
	}
	return &handlerDef{class: c, payload: asArray(p)}
}

// handlerDefOf is state_action_definition / transition_guard_definition:
// the structured key, else the *_class string.
func handlerDefOf(def *phpjson.Object, key, classKey string) *handlerDef {
	if h := normalizeHandlerDef(get(def, key)); h != nil {
		return h
	}
	if s, ok := get(def, classKey).AsString(); ok && phpjson.Trim(s) != "" {
		return &handlerDef{class: phpjson.Trim(s), payload: phpjson.NewObject()}
	}
	return nil
}

// Machine statuses (StateMachineStatus).
const (
	machineRunning      = "running"
	machineWaitingEvent = "waiting_event"
	machineCompleted    = "completed"
	machineFailed       = "failed"
	machinePaused       = "paused"
	machineCancelled    = "cancelled"
)

// parsePayloadLenient is a stored JSON column, null when it is not JSON.
func parsePayloadLenient(s string) phpjson.Value {
	v, err := phpjson.DecodeString(s)
	if err != nil {
		return phpjson.Null()
	}
	return v
}

// statusForEnteredState is status_for_entered_state.
func statusForEnteredState(def *phpjson.Object) string {
	if ts, ok := get(def, "terminal_status").AsString(); ok && phpjson.Trim(ts) != "" {
		return ts
	}
	if handlerDefOf(def, "action", "action_class") != nil {
		return machineRunning
	}
	return machineWaitingEvent
}
