package workflow

import "github.com/queuety-go/queuety/internal/phpjson"

// HandlerRef is a reference to a PHP handler class with an optional payload:
// a step's compensation, a for_each reducer, a repeat condition, _on_cancel,
// _on_deadline, a bundle's cancel_handler or deadline_handler.
//
// They are stored either as a plain class string (what the builder writes)
// or as {"class"|"handler": ..., "payload"|"config": {...}} (serialized
// definitions and the definition-bundle path). The payload, when not empty,
// is passed to the PHP method as an extra trailing argument.
type HandlerRef struct {
	Class string
	// Payload is never nil; PHP writes an empty one as [].
	Payload *phpjson.Object
}

// ParseHandlerRef reads a handler reference the way the runtime does
// (Workflow::handler_definition): a non-blank string, or an array with a
// non-blank class (or handler) and a payload (or config). ok is false when
// v names no handler.
func ParseHandlerRef(v phpjson.Value) (ref HandlerRef, ok bool) {
	if class, ok := phpjson.StringValue(v); ok {
		return HandlerRef{Class: class, Payload: phpjson.NewObject()}, true
	}
	if v.Kind() == phpjson.KindString || !phpjson.IsArray(v) {
		return HandlerRef{}, false
	}
	o := phpjson.AsArray(v)
	class, ok := phpjson.StringValue(phpjson.Coalesce(phpjson.Get(o, "class"), phpjson.Get(o, "handler")))
	if !ok {
		// PHP checks is_string and trim() on the coalesced value: a
		// non-string "class" does not fall back to "handler".
		return HandlerRef{}, false
	}
	payload := phpjson.Coalesce(phpjson.Get(o, "payload"), phpjson.Get(o, "config"))
	return HandlerRef{Class: class, Payload: phpjson.CloneObject(phpjson.AsArray(payload))}, true
}

// Value returns the structured form {"class":..,"payload":..} the
// definition-bundle path persists in _on_cancel and _on_deadline.
func (r HandlerRef) Value() phpjson.Value {
	payload := r.Payload
	if payload == nil {
		payload = phpjson.NewObject()
	}
	o := phpjson.NewObject()
	o.Set("class", phpjson.String(r.Class))
	o.Set("payload", phpjson.ObjectValue(payload))
	return phpjson.ObjectValue(o)
}
