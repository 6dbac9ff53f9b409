// Package phpjson reads and writes JSON exactly like PHP 8.2 does with
// json_decode($s, true) and json_encode($v) (default flags,
// serialize_precision = -1).
//
// The Go daemon shares MySQL rows with the Queuety WordPress plugin, so the
// bytes it writes must be the bytes PHP would have written for the same PHP
// value. That rules out encoding/json: it escapes differently (<, >, & and
// U+2028 but not "/" or other non-ASCII), formats floats differently, loses
// object key order, and knows nothing about PHP arrays, where {} and [] are
// the same value and {"0":"a","1":"b"} is a list.
//
// A Value is an ordered JSON tree. Objects keep their key order, numbers
// keep their literal text, and encoding applies PHP's rules:
//
//   - strings: "/" is escaped as "\/", every non-ASCII character as a
//     lowercase \uXXXX escape (astral characters as a surrogate pair),
//     control characters as \b \f \n \r \t or \u00XX; < > & ' and 0x7f are
//     written raw; invalid UTF-8 is an error (PHP returns false);
//   - arrays: an empty list or object is written as [], and an object whose
//     keys are exactly "0", "1", ... "n-1" in that order is written as a list;
//   - numbers: a literal without '.', 'e' or 'E' that fits in int64 is a PHP
//     int and is written as plain digits ("-0" becomes 0); anything else is a
//     PHP float (float64) written like PHP's serialize_precision -1
//     (shortest round-trip digits, "1.0e+25" style exponents when the
//     exponent is < -4 or >= 17, no ".0" on integral values);
//   - no whitespace; NaN and ±Inf cannot be encoded; nesting is limited to
//     512 arrays (PHP's default json_encode depth).
//
// Decode follows PHP's parser: strict RFC 8259, invalid UTF-8 and unpaired
// \u surrogates are rejected, at most 511 nested arrays (measured: that is
// what json_decode's default depth of 512 accepts, one less than
// json_encode), duplicate keys keep the first key's position and the last
// value. Unlike PHP, a number that overflows float64 (1e400) is rejected at
// Decode instead of becoming INF, which PHP could then never re-encode; this
// keeps the invariant that every decoded Value can be encoded.
//
// Encoding is a fixed point (decoding the output and encoding again gives
// the same bytes) with one exception inherited from PHP: a float -0 is
// written as -0, which reads back as the int 0 and is then written as 0.
package phpjson

import (
	"iter"
	"math"
	"slices"
	"strconv"
)

// Kind is the JSON type of a Value.
type Kind uint8

// Kinds of Value. The zero Value is Null.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindList
	KindObject
)

var kindNames = [...]string{"null", "bool", "number", "string", "list", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Bits of Value.flags.
const (
	flagTrue  uint8 = 1 << iota // KindBool: the value is true
	flagInt                     // KindNumber: a PHP int (bits hold an int64)
	flagFloat                   // KindNumber: a PHP float (bits hold a float64)
)

// Value is an immutable-by-convention handle on a JSON value. Copying a
// Value is cheap; lists share their backing slice and objects are shared
// through their *Object, so mutating an Object obtained from AsObject is
// visible through every copy of the Value. The zero Value is null.
type Value struct {
	kind  Kind
	flags uint8
	// str is the text of a KindString, or the literal of a KindNumber as
	// decoded or given to NumberLiteral ("" when built by Int or Float).
	str  string
	bits uint64 // KindNumber: int64 or float64 bits, see flags
	// list holds a KindList's elements behind a pointer, which keeps a
	// Value at 48 bytes instead of 64: a for_each state of 1,000,000
	// items decodes to 16 MB less (see elems).
	list *[]Value
	obj  *Object
}

// listOf is the KindList Value of vs, which it shares.
func listOf(vs []Value) Value { return Value{kind: KindList, list: &vs} }

// elems is a KindList's elements (nil for any other kind).
func (v Value) elems() []Value {
	if v.list == nil {
		return nil
	}
	return *v.list
}

// Null returns the JSON null.
func Null() Value { return Value{} }

// Bool returns true or false.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, flags: flagTrue}
	}
	return Value{kind: KindBool}
}

// Int returns a PHP int.
func Int(n int64) Value {
	return Value{kind: KindNumber, flags: flagInt, bits: uint64(n)}
}

// Float returns a PHP float. NaN and ±Inf are accepted here but Encode
// rejects them, as json_encode does.
func Float(f float64) Value {
	return Value{kind: KindNumber, flags: flagFloat, bits: math.Float64bits(f)}
}

// String returns a string value. It is not validated here; Encode rejects
// invalid UTF-8.
func String(s string) Value { return Value{kind: KindString, str: s} }

// NumberLiteral returns the number spelled by the JSON literal s, typed the
// way PHP's json_decode types it (int when it has no '.', 'e' or 'E' and
// fits in int64, float otherwise). The literal is kept and returned by
// Literal. It fails on anything that is not a JSON number or that
// overflows float64.
func NumberLiteral(s string) (Value, error) {
	if s == "" {
		return Value{}, &SyntaxError{Msg: "empty number literal"}
	}
	d := decoder{src: s}
	v, err := d.number()
	if err == nil && d.pos != len(s) {
		err = d.errorf(d.pos, "invalid character %s after number", quoteByte(s[d.pos]))
	}
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// List returns a list holding vs (not copied).
func List(vs ...Value) Value {
	if vs == nil {
		vs = []Value{}
	}
	return listOf(vs)
}

// ObjectValue returns a Value for o; a nil o gives a new empty object.
// The Value shares o.
func ObjectValue(o *Object) Value {
	if o == nil {
		o = NewObject()
	}
	return Value{kind: KindObject, obj: o}
}

// Kind reports the JSON type of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// IsInt reports whether v is a number PHP holds as an int.
func (v Value) IsInt() bool { return v.kind == KindNumber && v.flags&flagInt != 0 }

// AsBool returns the boolean and whether v is a bool.
func (v Value) AsBool() (b, ok bool) {
	return v.flags&flagTrue != 0, v.kind == KindBool
}

// AsString returns the text and whether v is a string. Numbers are not
// strings; use Literal for their text.
func (v Value) AsString() (string, bool) {
	if v.kind != KindString {
		return "", false
	}
	return v.str, true
}

// Literal returns the text of a number: the literal as decoded or given to
// NumberLiteral, or PHP's spelling for numbers built by Int and Float (Go's
// for NaN and ±Inf, which PHP cannot write). It returns "" for other kinds.
func (v Value) Literal() string {
	if v.kind != KindNumber {
		return ""
	}
	if v.str != "" {
		return v.str
	}
	if v.flags&flagInt != 0 {
		return strconv.FormatInt(int64(v.bits), 10)
	}
	f := math.Float64frombits(v.bits)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(appendFloat(nil, f))
}

// AsInt64 returns the number as an int64. It succeeds for PHP ints and for
// floats with an exact int64 value (json_encode writes 1.0 as 1, which PHP
// then reads back as an int), and fails for other kinds and fractions.
func (v Value) AsInt64() (int64, bool) {
	if v.kind != KindNumber {
		return 0, false
	}
	if v.flags&flagInt != 0 {
		return int64(v.bits), true
	}
	f := math.Float64frombits(v.bits)
	// -2^63 is exact as a float64; 2^63 is the first value out of range.
	if f >= -(1<<63) && f < 1<<63 && f == math.Trunc(f) {
		return int64(f), true
	}
	return 0, false
}

// AsFloat64 returns the number as a float64 (ints are converted, possibly
// rounding above 2^53) and whether v is a number.
func (v Value) AsFloat64() (float64, bool) {
	if v.kind != KindNumber {
		return 0, false
	}
	if v.flags&flagInt != 0 {
		return float64(int64(v.bits)), true
	}
	return math.Float64frombits(v.bits), true
}

// AsList returns the elements of a PHP list. Besides lists, it accepts
// objects that PHP holds as a list: the empty object and objects keyed
// "0".."n-1" in order; for those it returns a new slice. The slice of a
// list is shared, not copied.
func (v Value) AsList() ([]Value, bool) {
	switch v.kind {
	case KindList:
		return v.elems(), true
	case KindObject:
		if !v.obj.isList() {
			return nil, false
		}
		out := make([]Value, len(v.obj.members))
		for i, m := range v.obj.members {
			out[i] = m.value
		}
		return out, true
	}
	return nil, false
}

// AsObject returns the object. Because PHP cannot tell [] from {} (both
// are an empty array, and PHP writes both as []), an empty list is also
// accepted and yields a new empty Object that is not connected to v.
func (v Value) AsObject() (*Object, bool) {
	switch v.kind {
	case KindObject:
		return v.obj, true
	case KindList:
		if len(v.elems()) == 0 {
			return NewObject(), true
		}
	}
	return nil, false
}

// IsEmptyArray reports whether v is an empty list or an empty object, which
// are the same empty PHP array.
func (v Value) IsEmptyArray() bool {
	switch v.kind {
	case KindList:
		return len(v.elems()) == 0
	case KindObject:
		return v.obj.Len() == 0
	}
	return false
}

// Object is a JSON object with ordered, unique keys, like a PHP array
// with string keys. The zero Object is empty and ready to use. An Object is
// not safe for concurrent mutation.
type Object struct {
	members []member
	// index maps key to position once the object is large enough for a
	// linear scan to hurt; nil until then (and after Delete).
	index map[string]int
}

type member struct {
	key   string
	value Value
}

// indexThreshold is the size above which lookups build a map. Below it a
// linear scan over the keys is faster than hashing.
const indexThreshold = 16

// NewObject returns an empty object.
func NewObject() *Object { return &Object{} }

// Len returns the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.members)
}

func (o *Object) find(key string) int {
	if o == nil {
		return -1
	}
	if o.index == nil {
		if len(o.members) <= indexThreshold {
			for i := range o.members {
				if o.members[i].key == key {
					return i
				}
			}
			return -1
		}
		o.index = make(map[string]int, len(o.members))
		for i, m := range o.members {
			o.index[m.key] = i
		}
	}
	if i, ok := o.index[key]; ok {
		return i
	}
	return -1
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (Value, bool) {
	if i := o.find(key); i >= 0 {
		return o.members[i].value, true
	}
	return Value{}, false
}

// Set stores v under key. An existing key keeps its position, a new key is
// appended, exactly like assigning $a[$key] in PHP. It returns o so calls
// can be chained.
func (o *Object) Set(key string, v Value) *Object {
	if i := o.find(key); i >= 0 {
		o.members[i].value = v
		return o
	}
	o.members = append(o.members, member{key: key, value: v})
	if o.index != nil {
		o.index[key] = len(o.members) - 1
	}
	return o
}

// Delete removes key, keeping the order of the other keys (like unset in
// PHP), and reports whether it was present.
func (o *Object) Delete(key string) bool {
	i := o.find(key)
	if i < 0 {
		return false
	}
	// slices.Delete zeroes the freed slot, so no stale reference remains.
	// The positions after i moved, so the index is rebuilt on demand.
	o.members = slices.Delete(o.members, i, i+1)
	o.index = nil
	return true
}

// Keys returns the keys in order.
func (o *Object) Keys() []string {
	keys := make([]string, o.Len())
	for i := range keys {
		keys[i] = o.members[i].key
	}
	return keys
}

// All iterates over the keys and values in order.
func (o *Object) All() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		if o == nil {
			return
		}
		for _, m := range o.members {
			if !yield(m.key, m.value) {
				return
			}
		}
	}
}

// isList reports whether PHP would treat the object as a list: its keys,
// read as PHP array keys, are exactly 0..n-1 in order. A string key becomes
// an int key only in canonical decimal form, so comparing against the
// decimal spelling of each index is exact ("01", "+1", "-0" never match).
func (o *Object) isList() bool {
	if o == nil {
		return true
	}
	var buf [20]byte
	for i, m := range o.members {
		if string(strconv.AppendInt(buf[:0], int64(i), 10)) != m.key {
			return false
		}
	}
	return true
}
