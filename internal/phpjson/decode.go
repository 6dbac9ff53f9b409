package phpjson

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDecodeDepth is the deepest nesting of arrays and objects that
// json_decode accepts with its default depth of 512: 511 nested arrays
// decode, 512 fail (json_encode, by contrast, writes 512).
const maxDecodeDepth = 511

// SyntaxError describes input that json_decode would reject.
type SyntaxError struct {
	Offset int    // byte offset in the input where the problem was found
	Msg    string // what was wrong
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("phpjson: %s at byte offset %d", e.Msg, e.Offset)
}

// Decode parses b like json_decode($b, true), keeping object key order and
// number literals. The input is copied once; the returned Value's strings
// and literals point into that copy.
func Decode(b []byte) (Value, error) {
	return DecodeString(string(b))
}

// DecodeString is Decode for a string. The returned Value shares memory
// with s instead of copying it, so it keeps s alive.
func DecodeString(s string) (Value, error) {
	sc := scratchPool.Get().(*scratch)
	d := decoder{src: s, values: sc.values, members: sc.members}
	defer sc.release(&d)
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return Value{}, err
	}
	d.skipSpace()
	if d.pos < len(s) {
		return Value{}, d.errorf(d.pos, "invalid character %s after top-level value", quoteByte(s[d.pos]))
	}
	return v, nil
}

// scratch holds a decoder's stacks between calls, so that decoding the
// many small payloads of a job queue does not regrow them every time.
type scratch struct {
	values  []Value
	members []member
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{values: make([]Value, 0, 32), members: make([]member, 0, 32)}
}}

// maxPooled is the largest stack kept in the pool.
const maxPooled = 1024

// release returns d's stacks to the pool. It drops their references to
// the decoded document first, and does not keep stacks grown by an
// unusually large one.
func (sc *scratch) release(d *decoder) {
	if cap(d.values) > maxPooled || cap(d.members) > maxPooled {
		return
	}
	clear(d.values[:cap(d.values)])
	clear(d.members[:cap(d.members)])
	sc.values, sc.members = d.values[:0], d.members[:0]
	scratchPool.Put(sc)
}

// decoder is a recursive-descent parser over a string. Unescaped strings
// and number literals are sliced out of src, and containers collect their
// elements on shared stacks and are then copied out at their exact size,
// so each list or object costs one allocation for its elements.
type decoder struct {
	src     string
	pos     int
	depth   int
	values  []Value  // pending list elements of the open lists
	members []member // pending members of the open objects
}

func (d *decoder) errorf(offset int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips the four JSON whitespace bytes (PHP rejects \f and \v).
func (d *decoder) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (Value, error) {
	if d.pos >= len(d.src) {
		return Value{}, d.errorf(d.pos, "unexpected end of input, expecting a value")
	}
	switch c := d.src[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.string()
		return Value{kind: KindString, str: s}, err
	case 't':
		return d.keyword("true", Bool(true))
	case 'f':
		return d.keyword("false", Bool(false))
	case 'n':
		return d.keyword("null", Null())
	default:
		if c == '-' || isDigit(c) {
			return d.number()
		}
		return Value{}, d.errorf(d.pos, "invalid character %s looking for a value", quoteByte(c))
	}
}

func (d *decoder) keyword(word string, v Value) (Value, error) {
	if !strings.HasPrefix(d.src[d.pos:], word) {
		return Value{}, d.errorf(d.pos, "invalid literal, expecting %q", word)
	}
	d.pos += len(word)
	return v, nil
}

func (d *decoder) enter() error {
	if d.depth++; d.depth > maxDecodeDepth {
		return d.errorf(d.pos, "maximum nesting depth %d exceeded", maxDecodeDepth)
	}
	return nil
}

func (d *decoder) array() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++ // '['
	d.skipSpace()
	base := len(d.values)
	if d.pos < len(d.src) && d.src[d.pos] == ']' {
		d.pos++
		d.depth--
		return listOf([]Value{}), nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return Value{}, err
		}
		d.values = append(d.values, v)
		if base == 0 && len(d.values) == maxPooled {
			// A large list: grow the stack once to hold the rest, rather
			// than by a quarter at a time, whose old arrays would add up
			// to four times the list before the collector frees them.
			d.values = slices.Grow(d.values, d.countRest())
		}
		d.skipSpace()
		if d.pos >= len(d.src) {
			return Value{}, d.errorf(d.pos, "unexpected end of input in array")
		}
		switch c := d.src[d.pos]; c {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			d.depth--
			if base == 0 && len(d.values) > maxPooled {
				// A large list with no list open around it (the items of a
				// for_each state) keeps the stack as its backing array: at
				// most a quarter of it is spare, while a copy would hold
				// both at once (1,000,000 items: 48 MB more at the peak).
				// The stack starts afresh for whatever follows.
				list := d.values[:len(d.values):len(d.values)]
				d.values = nil
				return listOf(list), nil
			}
			list := slices.Clone(d.values[base:])
			d.values = d.values[:base]
			return listOf(list), nil
		default:
			return Value{}, d.errorf(d.pos, "invalid character %s after array element, expecting ',' or ']'", quoteByte(c))
		}
	}
}

// countRest counts the elements left in the list being read, from just
// after an element: the commas outside strings and nested containers
// before its closing bracket. It only sizes the stack, so on input that
// is not JSON it may miscount; the parse then reports the error.
func (d *decoder) countRest() int {
	n, depth, inString := 0, 0, false
	for i := d.pos; i < len(d.src); i++ {
		c := d.src[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			if depth == 0 {
				return n
			}
			depth--
		case c == ',' && depth == 0:
			n++
		}
	}
	return n
}

func (d *decoder) object() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		d.depth--
		return Value{kind: KindObject, obj: &Object{}}, nil
	}
	base := len(d.members)
	var index map[string]int // key -> position in d.members, once the object is large
	for {
		if d.pos >= len(d.src) {
			return Value{}, d.errorf(d.pos, "unexpected end of input in object")
		}
		if d.src[d.pos] != '"' {
			return Value{}, d.errorf(d.pos, "invalid character %s in object, expecting a string key", quoteByte(d.src[d.pos]))
		}
		key, err := d.string()
		if err != nil {
			return Value{}, err
		}
		d.skipSpace()
		if d.pos >= len(d.src) || d.src[d.pos] != ':' {
			return Value{}, d.errorf(d.pos, "expecting ':' after object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return Value{}, err
		}
		// PHP's duplicate-key behaviour: the last value wins and the key
		// stays where it first appeared.
		if i := findMember(d.members[base:], index, key); i >= 0 {
			d.members[base+i].value = v
		} else {
			d.members = append(d.members, member{key: key, value: v})
			if n := len(d.members) - base; index != nil {
				index[key] = n - 1
			} else if n > indexThreshold {
				index = make(map[string]int, 2*n)
				for j, m := range d.members[base:] {
					index[m.key] = j
				}
			}
		}
		d.skipSpace()
		if d.pos >= len(d.src) {
			return Value{}, d.errorf(d.pos, "unexpected end of input in object")
		}
		switch c := d.src[d.pos]; c {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			obj := &Object{members: slices.Clone(d.members[base:]), index: index}
			d.members = d.members[:base]
			return Value{kind: KindObject, obj: obj}, nil
		default:
			return Value{}, d.errorf(d.pos, "invalid character %s after object value, expecting ',' or '}'", quoteByte(c))
		}
	}
}

func findMember(members []member, index map[string]int, key string) int {
	if index != nil {
		if i, ok := index[key]; ok {
			return i
		}
		return -1
	}
	for i := range members {
		if members[i].key == key {
			return i
		}
	}
	return -1
}

// string parses the string starting at the opening quote at d.pos. The
// common case, no escapes, returns a substring of the input.
func (d *decoder) string() (string, error) {
	s := d.src
	start := d.pos + 1
	ascii := true
	for i := start; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if !ascii {
				if err := d.checkUTF8(start, i); err != nil {
					return "", err
				}
			}
			d.pos = i + 1
			return s[start:i], nil
		case c == '\\':
			return d.escapedString(start, i, ascii)
		case c < 0x20:
			return "", d.errorf(i, "control character 0x%02x in string", c)
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", d.errorf(len(s), "unexpected end of input in string")
}

// escapedString finishes a string that contains escapes; src[start:i] has
// already been scanned and i is at the first backslash.
func (d *decoder) escapedString(start, i int, ascii bool) (string, error) {
	s := d.src
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			// Escapes are ASCII and cannot complete a multi-byte sequence,
			// so the decoded text is valid exactly when the raw source is.
			if !ascii {
				if err := d.checkUTF8(start, i); err != nil {
					return "", err
				}
			}
			d.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			return "", d.errorf(i, "control character 0x%02x in string", c)
		case c != '\\':
			if c >= utf8.RuneSelf {
				ascii = false
			}
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, n, err := d.unicodeEscape(i)
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
			i += n
			continue
		default:
			return "", d.errorf(i, "invalid escape sequence \\%c", e)
		}
		i += 2
	}
	return "", d.errorf(len(s), "unexpected end of input in string")
}

// unicodeEscape decodes the \uXXXX escape at i (joining a surrogate pair)
// and returns the rune and the number of bytes consumed. Like PHP, an
// unpaired surrogate is an error rather than U+FFFD.
func (d *decoder) unicodeEscape(i int) (rune, int, error) {
	r, ok := hex4(d.src, i+2)
	if !ok {
		return 0, 0, d.errorf(i, "invalid \\u escape, expecting 4 hex digits")
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if r < 0xdc00 && strings.HasPrefix(d.src[i+6:], `\u`) {
		if r2, ok := hex4(d.src, i+8); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return utf16.DecodeRune(r, r2), 12, nil
		}
	}
	return 0, 0, d.errorf(i, "single unpaired UTF-16 surrogate in \\u escape")
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// checkUTF8 reports the first invalid UTF-8 sequence in src[start:end].
func (d *decoder) checkUTF8(start, end int) error {
	seg := d.src[start:end]
	if utf8.ValidString(seg) {
		return nil
	}
	for i := 0; i < len(seg); {
		r, n := utf8.DecodeRuneInString(seg[i:])
		if r == utf8.RuneError && n == 1 {
			return d.errorf(start+i, "malformed UTF-8 byte 0x%02x in string", seg[i])
		}
		i += n
	}
	return nil // unreachable: ValidString said there is an error
}

// number parses a JSON number at d.pos and types it like PHP's scanner:
// an integer literal within int64 is an int, everything else a float.
func (d *decoder) number() (Value, error) {
	s := d.src
	start, i := d.pos, d.pos
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++ // JSON forbids leading zeros, so "01" stops after the 0
	case i < len(s) && isDigit(s[i]):
		i = skipDigits(s, i)
	default:
		return Value{}, d.errorf(i, "invalid number, expecting a digit")
	}
	isInt := true
	if i < len(s) && s[i] == '.' {
		isInt = false
		if i++; i >= len(s) || !isDigit(s[i]) {
			return Value{}, d.errorf(i, "invalid number, expecting a digit after '.'")
		}
		i = skipDigits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return Value{}, d.errorf(i, "invalid number, expecting a digit in exponent")
		}
		i = skipDigits(s, i)
	}
	lit := s[start:i]
	d.pos = i
	if isInt {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return Value{kind: KindNumber, flags: flagInt, str: lit, bits: uint64(n)}, nil
		}
		// Out of int64 range: PHP silently falls back to a float.
	}
	// ParseFloat is correctly rounded like zend_strtod; it only fails here
	// with ErrRange, where underflow gives ±0 (as in PHP) and overflow ±Inf.
	f, _ := strconv.ParseFloat(lit, 64)
	if math.IsInf(f, 0) {
		return Value{}, d.errorf(start, "number %s overflows float64 (PHP would read INF, which json_encode rejects)", lit)
	}
	return Value{kind: KindNumber, flags: flagFloat, str: lit, bits: math.Float64bits(f)}, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}
