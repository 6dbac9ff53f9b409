package phpjson

import (
	"math"
	"strconv"
	"strings"
)

// This file is the one place queuety-go spells out how Queuety's PHP reads
// decoded JSON: the (int) and (string) casts, trim(), is_scalar, empty(),
// array access on lists and objects, array_replace and values_equal. Every
// package reads payloads, step definitions and options through these, so a
// value PHP accepts with a quirk ("1e3", " 12", a list where an object was
// meant) means the same on every Go path.

// Get returns o[key], or null when o is nil or has no such key: PHP's
// $a['key'] ?? null.
func Get(o *Object, key string) Value {
	if o == nil {
		return Null()
	}
	v, _ := o.Get(key)
	return v
}

// Coalesce returns the first non-null value: PHP's $a ?? $b ?? $c. Note that
// "" and 0 are not null, so they stop the chain even where a later check
// rejects them.
func Coalesce(vals ...Value) Value {
	for _, v := range vals {
		if !v.IsNull() {
			return v
		}
	}
	return Null()
}

// IsScalar is PHP's is_scalar for a decoded JSON value.
func IsScalar(v Value) bool {
	switch v.Kind() {
	case KindBool, KindNumber, KindString:
		return true
	}
	return false
}

// IsArray is PHP's is_array for a decoded JSON value (lists and objects
// are both PHP arrays).
func IsArray(v Value) bool {
	return v.Kind() == KindList || v.Kind() == KindObject
}

// ToInt is PHP 8's (int) cast of a decoded JSON value (Workflow::to_int, and
// every `is_scalar($v) ? (int) $v : 0`): scalars are cast, null and arrays
// are 0.
func ToInt(v Value) int64 {
	switch v.Kind() {
	case KindBool:
		if b, _ := v.AsBool(); b {
			return 1
		}
		return 0
	case KindNumber:
		if n, ok := v.AsInt64(); ok {
			return n
		}
		f, _ := v.AsFloat64()
		return FloatToInt(f)
	case KindString:
		s, _ := v.AsString()
		return StringToInt(s)
	}
	return 0
}

// FloatToInt is PHP 8's (int) of a float on 64-bit: truncation toward
// zero, NaN and ±Inf as 0, and out-of-range values wrapped modulo 2^64
// (zend_dval_to_lval), so (int)1e19 is -8446744073709551616.
func FloatToInt(f float64) int64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	if f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	const twoPow64 = 1 << 64
	m := math.Mod(f, twoPow64)
	if m < 0 {
		m += twoPow64
	}
	if m >= 1<<63 {
		m -= twoPow64
	}
	return int64(m)
}

// StringToInt is PHP 8's (int) of a string: leading whitespace, then the
// longest numeric prefix ("12abc" is 12, "1e3" is 1000, "abc" is 0);
// out-of-range values saturate.
func StringToInt(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	end, isFloat := numericPrefix(s)
	if end == 0 {
		return 0
	}
	if !isFloat {
		n, err := strconv.ParseInt(s[:end], 10, 64)
		if err != nil { // overflow: PHP saturates integer strings
			if s[0] == '-' {
				return math.MinInt64
			}
			return math.MaxInt64
		}
		return n
	}
	// Float strings saturate instead of wrapping (zend_dval_to_lval_cap);
	// one that overflows to ±Inf is 0.
	f, err := strconv.ParseFloat(s[:end], 64)
	switch {
	case err != nil:
		return 0
	case f >= 1<<63:
		return math.MaxInt64
	case f < -(1 << 63):
		return math.MinInt64
	}
	return int64(f)
}

// numericPrefix returns the length of the numeric prefix of s and whether
// it has a fraction or exponent.
func numericPrefix(s string) (int, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	isFloat := false
	if i < len(s) && s[i] == '.' {
		j := i + 1
		frac := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			frac++
		}
		if digits+frac > 0 {
			i, digits, isFloat = j, digits+frac, true
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i, isFloat = k, true
		}
	}
	return i, isFloat
}

// ToString is Workflow::to_string: (string) for scalars, "" otherwise.
// Floats use the JSON spelling, which differs from PHP's (string) only in
// exponent case and precision; no step definition field is a float.
func ToString(v Value) string {
	switch v.Kind() {
	case KindBool:
		if b, _ := v.AsBool(); b {
			return "1"
		}
		return ""
	case KindNumber:
		if n, ok := v.AsInt64(); ok && v.IsInt() {
			return strconv.FormatInt(n, 10)
		}
		return v.Literal()
	case KindString:
		s, _ := v.AsString()
		return s
	}
	return ""
}

// StringValue is StepDispatchOptions::string_value: a string that is not
// blank, trimmed.
func StringValue(v Value) (string, bool) {
	s, ok := v.AsString()
	if !ok {
		return "", false
	}
	s = Trim(s)
	return s, s != ""
}

// OptionalString reads a nullable string field the way the runtime does for
// keys such as result_key and correlation_key: a non-blank string, trimmed.
func OptionalString(v Value) string {
	s, _ := StringValue(v)
	return s
}

// Trim is PHP's trim() with its default character list. Go's
// strings.TrimSpace strips a different set (Unicode spaces and \f, not NUL),
// which would make Go and PHP read the same input differently.
func Trim(s string) string { return strings.Trim(s, " \t\n\r\x00\x0B") }

// PositiveInt is StepDispatchOptions::positive_int: a real JSON integer > 0
// (a numeric string or 2.0 does not count).
func PositiveInt(v Value) (int64, bool) {
	n, ok := v.AsInt64()
	if !ok || !v.IsInt() || n <= 0 {
		return 0, false
	}
	return n, true
}

// NonNegativeInt is StepDispatchOptions::non_negative_int.
func NonNegativeInt(v Value) (int64, bool) {
	n, ok := v.AsInt64()
	if !ok || !v.IsInt() || n < 0 {
		return 0, false
	}
	return n, true
}

// AsArray is Workflow::as_array: any PHP array as an object with string
// keys (a list becomes "0".."n-1"), anything else as an empty object. The
// result may share v's object: callers must clone before mutating.
func AsArray(v Value) *Object {
	switch v.Kind() {
	case KindObject:
		o, _ := v.AsObject()
		return o
	case KindList:
		list, _ := v.AsList()
		o := NewObject()
		for i, e := range list {
			o.Set(strconv.Itoa(i), e)
		}
		return o
	}
	return NewObject()
}

// Values returns the values of a PHP array in order (array_values), or
// nil when v is not an array.
func Values(v Value) []Value {
	switch v.Kind() {
	case KindList:
		list, _ := v.AsList()
		return list
	case KindObject:
		o, _ := v.AsObject()
		out := make([]Value, 0, o.Len())
		for _, e := range o.All() {
			out = append(out, e)
		}
		return out
	}
	return nil
}

// Index reads $array[key] where key may address a list position
// ($rate_limit[0] works on both [5,60] and {"0":5,"1":60}).
func Index(v Value, key string) Value {
	switch v.Kind() {
	case KindObject:
		o, _ := v.AsObject()
		return Get(o, key)
	case KindList:
		if !IsIntKey(key) {
			return Null()
		}
		i, err := strconv.Atoi(key)
		list, _ := v.AsList()
		if err != nil || i < 0 || i >= len(list) {
			return Null()
		}
		return list[i]
	}
	return Null()
}

// IsIntKey reports whether PHP turns the string key into an int key:
// canonical decimal within int64 ("7", "-3", not "07", "+1" or "-0").
func IsIntKey(key string) bool {
	if key == "" || key == "-0" {
		return false
	}
	digits := key
	if key[0] == '-' {
		digits = key[1:]
	}
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(key, 10, 64)
	return err == nil
}

// CloneObject returns a shallow copy of o (PHP arrays are values: copying
// one and changing the copy leaves the original alone).
func CloneObject(o *Object) *Object {
	out := NewObject()
	for k, v := range o.All() {
		out.Set(k, v)
	}
	return out
}

// ArrayReplace is PHP's array_replace for two string-keyed arrays: base's
// keys in order with values from over, then over's new keys appended.
func ArrayReplace(base, over *Object) *Object {
	out := CloneObject(base)
	for k, v := range over.All() {
		out.Set(k, v)
	}
	return out
}

// Truthy is the negation of PHP's empty(): false for null, false, 0, 0.0,
// "", "0" and empty arrays.
func Truthy(v Value) bool {
	switch v.Kind() {
	case KindBool:
		b, _ := v.AsBool()
		return b
	case KindNumber:
		f, _ := v.AsFloat64()
		return f != 0
	case KindString:
		s, _ := v.AsString()
		return s != "" && s != "0"
	case KindList, KindObject:
		return !v.IsEmptyArray()
	}
	return false
}

// Strings is a list of strings, as PHP encodes a string[] array.
func Strings(ss []string) Value {
	vs := make([]Value, len(ss))
	for i, s := range ss {
		vs[i] = String(s)
	}
	return List(vs...)
}

// SetUnlessNull sets key to v unless v is null: an array literal the
// plugin passes through array_filter to drop its null entries.
func SetUnlessNull(o *Object, key string, v Value) {
	if !v.IsNull() {
		o.Set(key, v)
	}
}

// NullIfEmpty is s, or null when s is "" (a nullable string field).
func NullIfEmpty(s string) Value {
	if s == "" {
		return Null()
	}
	return String(s)
}
