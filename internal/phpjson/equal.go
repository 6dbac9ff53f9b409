package phpjson

import (
	"slices"
	"strings"
)

// ValuesEqual compares canonical JSON encodings (values_equal): objects
// with their keys sorted, lists in order.
func ValuesEqual(a, b Value) (bool, error) {
	ea, err := Encode(canonical(a))
	if err != nil {
		return false, err
	}
	eb, err := Encode(canonical(b))
	if err != nil {
		return false, err
	}
	return string(ea) == string(eb), nil
}

func canonical(v Value) Value {
	if !IsArray(v) {
		return v
	}
	o := AsArray(v)
	if l, ok := v.AsList(); ok {
		out := make([]Value, len(l))
		for i, e := range l {
			out[i] = canonical(e)
		}
		return List(out...)
	}
	keys := o.Keys()
	slices.SortFunc(keys, ksortCompare)
	out := NewObject()
	for _, k := range keys {
		out.Set(k, canonical(Get(o, k)))
	}
	return ObjectValue(out)
}

// ksortCompare orders PHP array keys as ksort does for int and string keys.
func ksortCompare(a, b string) int {
	ai, bi := IsIntKey(a), IsIntKey(b)
	if ai && bi {
		x, y := StringToInt(a), StringToInt(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
