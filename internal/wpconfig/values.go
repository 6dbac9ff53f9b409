package wpconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// Constant returns the value of a define() whose value is a PHP literal:
// a string, an integer (int64), a float (float64), true, false, null (nil)
// or an array of those ([]any for a list, []Pair otherwise, in source
// order; both [..] and array(..) forms). ok is false when the constant is
// not defined; err says why a defined value is not a literal.
func (s Settings) Constant(name string) (v any, ok bool, err error) {
	b, ok := s.consts[name]
	if !ok {
		return nil, false, nil
	}
	v, rest, err := literalValue(b.expr)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected %q", rest[0].text)
	}
	if err != nil {
		return nil, true, fmt.Errorf("%s is not a literal: %w", name, err)
	}
	return v, true, nil
}

// Pair is one key => value entry of a PHP array with keys.
type Pair struct {
	Key   any // string or int64
	Value any
}

// literalValue reads one literal from the front of toks.
func literalValue(toks []token) (any, []token, error) {
	if len(toks) == 0 {
		return nil, nil, fmt.Errorf("no value")
	}
	t := toks[0]
	switch {
	case t.kind == kStr:
		if t.err != nil {
			return nil, nil, t.err
		}
		return t.text, toks[1:], nil
	case t.kind == kNum:
		return number(t.text, toks[1:], false)
	case t.kind == kPunct && (t.text == "-" || t.text == "+") && len(toks) > 1 && toks[1].kind == kNum:
		return number(toks[1].text, toks[2:], t.text == "-")
	case t.kind == kIdent:
		switch strings.ToLower(t.text) {
		case "true":
			return true, toks[1:], nil
		case "false":
			return false, toks[1:], nil
		case "null":
			return nil, toks[1:], nil
		case "array":
			if len(toks) > 1 && toks[1].kind == kPunct && toks[1].text == "(" {
				return arrayValue(toks[2:], ")")
			}
		}
	case t.kind == kPunct && t.text == "[":
		return arrayValue(toks[1:], "]")
	}
	return nil, nil, fmt.Errorf("%q is not a literal", t.text)
}

func number(text string, rest []token, negative bool) (any, []token, error) {
	clean := strings.ReplaceAll(text, "_", "")
	if n, err := strconv.ParseInt(clean, 0, 64); err == nil {
		if negative {
			n = -n
		}
		return n, rest, nil
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("number %q: %w", text, err)
	}
	if negative {
		f = -f
	}
	return f, rest, nil
}

// arrayValue reads array entries up to the closing token.
func arrayValue(toks []token, closing string) (any, []token, error) {
	var list []any
	var pairs []Pair
	keyed := false
	var next int64 // PHP's next integer key: one past the largest so far
	key := func(k any) any {
		if n, ok := k.(int64); ok && n >= next {
			next = n + 1
		}
		return k
	}
	for {
		if len(toks) > 0 && toks[0].kind == kPunct && toks[0].text == closing {
			if keyed {
				return pairs, toks[1:], nil
			}
			if list == nil {
				list = []any{}
			}
			return list, toks[1:], nil
		}
		v, rest, err := literalValue(toks)
		if err != nil {
			return nil, nil, err
		}
		if len(rest) > 0 && rest[0].kind == kPunct && rest[0].text == "=>" {
			if !keyed {
				keyed = true
				for i, e := range list {
					pairs = append(pairs, Pair{Key: key(int64(i)), Value: e})
				}
			}
			val, after, err := literalValue(rest[1:])
			if err != nil {
				return nil, nil, err
			}
			pairs = append(pairs, Pair{Key: key(v), Value: val})
			rest = after
		} else if keyed {
			pairs = append(pairs, Pair{Key: key(next), Value: v})
		} else {
			list = append(list, v)
		}
		switch {
		case len(rest) > 0 && rest[0].kind == kPunct && rest[0].text == ",":
			toks = rest[1:]
		case len(rest) > 0 && rest[0].kind == kPunct && rest[0].text == closing:
			toks = rest
		default:
			return nil, nil, fmt.Errorf("unterminated array")
		}
	}
}

// IntMap reads a constant holding an array of name => integer, as the
// plugin's Config::normalize_int_map_constant does: names trimmed, blank
// names and values below 1 dropped, values cast like PHP's (int). A value
// that is not an array gives an empty map; ok is false when the constant
// is not defined.
func (s Settings) IntMap(name string) (m map[string]int64, ok bool, err error) {
	v, ok, err := s.Constant(name)
	if !ok || err != nil {
		return nil, ok, err
	}
	m = map[string]int64{}
	add := func(k any, val any) {
		key := strings.TrimSpace(fmt.Sprint(k))
		n := phpInt(val)
		if key != "" && n >= 1 {
			m[key] = n
		}
	}
	switch a := v.(type) {
	case []Pair:
		for _, p := range a {
			add(p.Key, p.Value)
		}
	case []any:
		for i, e := range a {
			add(int64(i), e)
		}
	}
	return m, true, nil
}

// Bool reads a constant as PHP's truthiness would (QUEUETY_DEBUG: defined
// and truthy).
func (s Settings) Bool(name string) (b bool, ok bool, err error) {
	v, ok, err := s.Constant(name)
	if !ok || err != nil {
		return false, ok, err
	}
	switch x := v.(type) {
	case nil:
		return false, true, nil
	case bool:
		return x, true, nil
	case int64:
		return x != 0, true, nil
	case float64:
		return x != 0, true, nil
	case string:
		return x != "" && x != "0", true, nil
	case []any:
		return len(x) > 0, true, nil
	case []Pair:
		return len(x) > 0, true, nil
	}
	return false, true, nil
}

// phpInt is PHP's (int) of a scalar (arrays are 0 here: is_scalar fails).
func phpInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
	case string:
		t := strings.TrimLeft(x, " \t\n\r\v\f")
		end := 0
		for end < len(t) && (t[end] >= '0' && t[end] <= '9' || end == 0 && (t[end] == '-' || t[end] == '+')) {
			end++
		}
		n, _ := strconv.ParseInt(t[:end], 10, 64)
		return n
	}
	return 0
}
