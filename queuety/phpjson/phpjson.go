// Package phpjson is the public face of the JSON values queuety-go shares
// with PHP: a workflow's state, a step's output, a job's payload. Values
// keep their key order and are written with PHP's json_encode rules, so the
// bytes a Go step stores are the bytes a PHP step would have stored.
//
// The types are aliases of the implementation the daemon uses inside, so a
// value built here is the value the workflow API takes and returns:
//
//	out := phpjson.NewObject().Set("receipt", phpjson.String("r-1"))
package phpjson

import (
	impl "github.com/queuety-go/queuety/internal/phpjson"
)

type (
	// Value is one JSON value: null, bool, number, string, list or object.
	// The zero Value is null.
	Value = impl.Value
	// Object is a JSON object (a PHP array with string keys) in key order.
	Object = impl.Object
	// Kind says which of the JSON types a Value holds.
	Kind = impl.Kind
	// SyntaxError is a Decode error with its byte offset.
	SyntaxError = impl.SyntaxError
)

// Kinds of Value.
const (
	KindNull   = impl.KindNull
	KindBool   = impl.KindBool
	KindNumber = impl.KindNumber
	KindString = impl.KindString
	KindList   = impl.KindList
	KindObject = impl.KindObject
)

// NewObject returns an empty object; Set adds keys in order.
func NewObject() *Object { return impl.NewObject() }

// Null is JSON null.
func Null() Value { return impl.Null() }

// Bool is a JSON boolean.
func Bool(b bool) Value { return impl.Bool(b) }

// Int is a PHP int.
func Int(n int64) Value { return impl.Int(n) }

// Float is a PHP float, written as PHP writes it (2.0 as 2, 0.1 as 0.1).
func Float(f float64) Value { return impl.Float(f) }

// String is a JSON string.
func String(s string) Value { return impl.String(s) }

// List is a JSON list.
func List(vs ...Value) Value { return impl.List(vs...) }

// ObjectValue wraps an object as a Value.
func ObjectValue(o *Object) Value { return impl.ObjectValue(o) }

// FromGo converts a Go value (maps, slices, structs through encoding/json,
// numbers, strings, bools, nil) into a Value.
func FromGo(x any) (Value, error) { return impl.FromGo(x) }

// Decode parses JSON as PHP's json_decode($s, true) does.
func Decode(b []byte) (Value, error) { return impl.Decode(b) }

// Encode writes v as PHP's json_encode($v) does.
func Encode(v Value) ([]byte, error) { return impl.Encode(v) }
