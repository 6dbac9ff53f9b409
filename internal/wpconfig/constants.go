package wpconfig

import (
	"strconv"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// ConstKind is the PHP type of a literal define() value.
type ConstKind int

const (
	ConstString ConstKind = iota
	ConstInt
	ConstFloat
	ConstBool
	ConstNull
	ConstArray // an array literal whose keys and values are scalar literals
)

// Constant is the literal value of one define(). The plugin's settings
// (QUEUETY_STALE_TIMEOUT, 3600; QUEUETY_DEBUG, true;
// QUEUETY_RESOURCE_QUEUE_COST_BUDGETS, array('default' => 20)) are
// integers, booleans and arrays, which Settings.Defines, holding strings
// only, leaves out.
type Constant struct {
	Kind ConstKind
	// Text is the value as PHP's (string) cast gives it for scalars: "3600",
	// "1" for true, "" for false and null; the string itself for a string.
	Text string
	// Array holds an array's entries in order (ConstArray only); keys of a
	// list are "0", "1", ...
	Array []ArrayEntry
	// Line is the define()'s line, for messages.
	Line int
}

// ArrayEntry is one key => value pair of an array constant.
type ArrayEntry struct {
	Key   string
	Value Constant
}

// Int is PHP's (int) cast of a scalar constant, as the plugin's
// Config::int_constant applies it: "12abc" is 12, "1e3" 1000, "abc" 0; ok is
// false for an array, which int_constant replaces with its default.
func (c Constant) Int() (n int64, ok bool) {
	switch c.Kind {
	case ConstArray:
		return 0, false
	case ConstFloat:
		f, _ := strconv.ParseFloat(c.Text, 64)
		return phpjson.FloatToInt(f), true
	}
	// Ints, booleans and null hold their (string) form, which casts the same.
	return phpjson.StringToInt(c.Text), true
}

// Bool is PHP's (bool) cast: false, 0, 0.0, "", "0", null and an empty
// array are false.
func (c Constant) Bool() bool {
	switch c.Kind {
	case ConstArray:
		return len(c.Array) > 0
	case ConstFloat:
		f, _ := strconv.ParseFloat(c.Text, 64)
		return f != 0
	}
	return c.Text != "" && c.Text != "0"
}

// constants evaluates every define() whose value is a literal: a string,
// a number (with an optional sign), true, false, null, or an array() / []
// of those with literal keys. Anything computed is left out.
func (e *evaluator) constants(consts map[string]binding) map[string]Constant {
	out := map[string]Constant{}
	for name, b := range consts {
		if v, ok := literalValue(b.expr, true); ok {
			v.Line = e.line(b.at)
			out[name] = v
		}
	}
	return out
}

func literalValue(expr []token, allowArray bool) (Constant, bool) {
	if len(expr) == 0 {
		return Constant{}, false
	}
	if allowArray {
		if inner, ok := arrayBody(expr); ok {
			return arrayLiteral(inner)
		}
	}
	sign := ""
	if expr[0].kind == kPunct && (expr[0].text == "-" || expr[0].text == "+") {
		sign, expr = expr[0].text, expr[1:]
		if len(expr) != 1 || expr[0].kind != kNum {
			return Constant{}, false
		}
	}
	if len(expr) != 1 {
		return Constant{}, false
	}
	t := expr[0]
	switch t.kind {
	case kStr:
		return Constant{Kind: ConstString, Text: t.text}, t.err == nil
	case kNum:
		return number(sign, t.text)
	case kIdent:
		switch strings.ToLower(strings.TrimPrefix(t.text, `\`)) {
		case "true":
			return Constant{Kind: ConstBool, Text: "1"}, true
		case "false":
			return Constant{Kind: ConstBool, Text: ""}, true
		case "null":
			return Constant{Kind: ConstNull, Text: ""}, true
		}
	}
	return Constant{}, false
}

// number reads a PHP integer or float literal (decimal, 0x, 0o, 0b,
// underscores); sign is "-", "+" or "".
func number(sign, text string) (Constant, bool) {
	clean := strings.ReplaceAll(text, "_", "")
	if n, err := strconv.ParseInt(sign+clean, 0, 64); err == nil {
		return Constant{Kind: ConstInt, Text: strconv.FormatInt(n, 10)}, true
	}
	if len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "01234567") == "" { // PHP's legacy octal 0755
		if n, err := strconv.ParseInt(sign+"0o"+clean[1:], 0, 64); err == nil {
			return Constant{Kind: ConstInt, Text: strconv.FormatInt(n, 10)}, true
		}
	}
	if f, err := strconv.ParseFloat(sign+clean, 64); err == nil {
		return Constant{Kind: ConstFloat, Text: strconv.FormatFloat(f, 'g', -1, 64)}, true
	}
	return Constant{}, false
}

// arrayBody returns the tokens between array( ... ) or [ ... ] when expr
// is exactly one such literal.
func arrayBody(expr []token) ([]token, bool) {
	last := len(expr) - 1
	switch {
	case len(expr) >= 3 && expr[0].kind == kIdent && strings.EqualFold(expr[0].text, "array") &&
		expr[1].kind == kPunct && expr[1].text == "(" && expr[last].kind == kPunct && expr[last].text == ")":
		if _, end := callArgs(expr, 1); end == last {
			return expr[2:last], true
		}
	case len(expr) >= 2 && expr[0].kind == kPunct && expr[0].text == "[" && expr[last].kind == kPunct && expr[last].text == "]":
		depth := 0
		for i, t := range expr {
			depth += nesting(t)
			if depth == 0 && i != last {
				return nil, false
			}
		}
		return expr[1:last], true
	}
	return nil, false
}

// arrayLiteral reads `k => v, v2, ...` (one level: nested arrays are not
// literal settings the plugin reads).
func arrayLiteral(body []token) (Constant, bool) {
	c := Constant{Kind: ConstArray}
	next := int64(0)
	var parts [][]token
	from, depth := 0, 0
	for i, t := range body {
		depth += nesting(t)
		if depth == 0 && t.kind == kPunct && t.text == "," {
			parts = append(parts, body[from:i])
			from = i + 1
		}
	}
	if from < len(body) {
		parts = append(parts, body[from:])
	}
	for _, p := range parts {
		if len(p) == 0 {
			continue // a trailing comma
		}
		arrow := -1
		for i, t := range p {
			if t.kind == kPunct && t.text == "=>" {
				arrow = i
				break
			}
		}
		var key string
		valExpr := p
		if arrow >= 0 {
			k, ok := literalValue(p[:arrow], false)
			if !ok || k.Kind == ConstArray {
				return Constant{}, false
			}
			key, valExpr = k.Text, p[arrow+1:]
			if n, err := strconv.ParseInt(key, 10, 64); err == nil && n >= next {
				next = n + 1
			}
		} else {
			key = strconv.FormatInt(next, 10)
			next++
		}
		v, ok := literalValue(valExpr, false)
		if !ok {
			return Constant{}, false
		}
		c.Array = append(c.Array, ArrayEntry{Key: key, Value: v})
	}
	return c, true
}
