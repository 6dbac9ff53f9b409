package phpjson

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// FromGo converts a plain Go value to a Value:
//
//   - nil, bool, string;
//   - all int and uint types (a uint64 above math.MaxInt64 becomes a float,
//     as PHP reads such a literal);
//   - float64, and float32 through its shortest decimal form (float32(0.1)
//     gives 0.1, as encoding/json would write it);
//   - json.Number (via NumberLiteral) and json.RawMessage (via Decode);
//   - []any and []Value as lists;
//   - map[string]any with its keys sorted (Go maps have no order; build an
//     Object when the order matters);
//   - Value, *Value and *Object as they are (nil pointers give null).
//
// Anything else is an error: FromGo uses no reflection.
func FromGo(x any) (Value, error) {
	return fromGo(x, 0)
}

func fromGo(x any, depth int) (Value, error) {
	if depth > maxEncodeDepth {
		// Deep enough that Encode would fail anyway; also stops cycles.
		return Value{}, ErrDepth
	}
	switch t := x.(type) {
	case nil:
		return Null(), nil
	case Value:
		return t, nil
	case *Value:
		if t == nil {
			return Null(), nil
		}
		return *t, nil
	case *Object:
		if t == nil {
			return Null(), nil
		}
		return ObjectValue(t), nil
	case bool:
		return Bool(t), nil
	case string:
		return String(t), nil
	case int:
		return Int(int64(t)), nil
	case int8:
		return Int(int64(t)), nil
	case int16:
		return Int(int64(t)), nil
	case int32:
		return Int(int64(t)), nil
	case int64:
		return Int(t), nil
	case uint:
		return fromUint(uint64(t)), nil
	case uint8:
		return Int(int64(t)), nil
	case uint16:
		return Int(int64(t)), nil
	case uint32:
		return Int(int64(t)), nil
	case uint64:
		return fromUint(t), nil
	case float64:
		return Float(t), nil
	case float32:
		f := float64(t)
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		}
		return Float(f), nil
	case json.Number:
		return NumberLiteral(string(t))
	case json.RawMessage:
		return Decode(t)
	case []Value:
		return List(t...), nil
	case []any:
		list := make([]Value, len(t))
		for i, e := range t {
			v, err := fromGo(e, depth+1)
			if err != nil {
				return Value{}, err
			}
			list[i] = v
		}
		return List(list...), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		obj := &Object{members: make([]member, 0, len(keys))}
		for _, k := range keys {
			v, err := fromGo(t[k], depth+1)
			if err != nil {
				return Value{}, err
			}
			obj.Set(k, v)
		}
		return ObjectValue(obj), nil
	}
	return Value{}, fmt.Errorf("phpjson: cannot convert %T to a Value", x)
}

func fromUint(n uint64) Value {
	if n <= math.MaxInt64 {
		return Int(int64(n))
	}
	return Float(float64(n)) // what PHP's json_decode makes of the literal
}

// ToGo converts v to plain Go values, typed the way PHP types them:
// nil, bool, string, int64 for PHP ints, float64 for PHP floats, []any
// for lists and map[string]any for objects. Object key order is lost
// (keep the Value when it matters); an object keyed "0".."n-1" stays a map
// and an empty object stays an empty map, even though PHP would see lists.
func (v Value) ToGo() any {
	switch v.kind {
	case KindBool:
		return v.flags&flagTrue != 0
	case KindNumber:
		if v.flags&flagInt != 0 {
			return int64(v.bits)
		}
		return math.Float64frombits(v.bits)
	case KindString:
		return v.str
	case KindList:
		out := make([]any, len(v.elems()))
		for i, e := range v.elems() {
			out[i] = e.ToGo()
		}
		return out
	case KindObject:
		out := make(map[string]any, v.obj.Len())
		for _, m := range v.obj.members {
			out[m.key] = m.value.ToGo()
		}
		return out
	}
	return nil
}

// MarshalJSON implements json.Marshaler with the PHP encoding. Note that
// json.Marshal re-escapes <, > and & in the result (as \u003c...) unless
// HTML escaping is disabled on a json.Encoder; call Encode directly when
// the exact PHP bytes matter.
func (v Value) MarshalJSON() ([]byte, error) { return Encode(v) }

// UnmarshalJSON implements json.Unmarshaler with Decode.
func (v *Value) UnmarshalJSON(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*v = d
	return nil
}

var (
	_ json.Marshaler   = Value{}
	_ json.Unmarshaler = (*Value)(nil)
)
