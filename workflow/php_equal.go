package workflow

import (
	"slices"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// valuesEqual compares canonical JSON encodings (values_equal): objects
// with their keys sorted, lists in order.
func valuesEqual(a, b phpjson.Value) (bool, error) {
	ea, err := phpjson.Encode(canonical(a))
	if err != nil {
		return false, err
	}
	eb, err := phpjson.Encode(canonical(b))
	if err != nil {
		return false, err
	}
	return string(ea) == string(eb), nil
}

func canonical(v phpjson.Value) phpjson.Value {
	if !isArray(v) {
		return v
	}
	o := phpArray(v)
	if l, ok := v.AsList(); ok {
		out := make([]phpjson.Value, len(l))
		for i, e := range l {
			out[i] = canonical(e)
		}
		return phpjson.List(out...)
	}
	keys := o.Keys()
	slices.SortFunc(keys, ksortCompare)
	out := phpjson.NewObject()
	for _, k := range keys {
		out.Set(k, canonical(get(o, k)))
	}
	return phpjson.ObjectValue(out)
}

// ksortCompare orders PHP array keys as ksort does for int and string keys.
func ksortCompare(a, b string) int {
	ai, bi := isPHPIntKey(a), isPHPIntKey(b)
	if ai && bi {
		x, y := stringToInt(a), stringToInt(b)
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
