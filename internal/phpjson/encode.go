package phpjson

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// maxEncodeDepth is json_encode's default depth: 512 nested arrays encode,
// 513 fail. (json_decode's limit is one lower, see maxDecodeDepth.)
const maxEncodeDepth = 512

// Errors returned by Encode, named after json_last_error_msg().
var (
	ErrInvalidUTF8 = errors.New("phpjson: malformed UTF-8 characters, possibly incorrectly encoded")
	ErrInfOrNaN    = errors.New("phpjson: Inf and NaN cannot be JSON encoded")
	ErrDepth       = errors.New("phpjson: maximum stack depth exceeded")
)

// Encode returns the bytes PHP's json_encode writes for v.
func Encode(v Value) ([]byte, error) {
	return Append(make([]byte, 0, 128), v)
}

// MarshalPHP returns the bytes PHP's json_encode writes for v.
func (v Value) MarshalPHP() ([]byte, error) { return Encode(v) }

// Append appends the PHP encoding of v to dst, so hot paths can reuse a
// buffer. On error dst is returned unchanged in length.
func Append(dst []byte, v Value) ([]byte, error) {
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func appendValue(dst []byte, v Value, depth int) ([]byte, error) {
	switch v.kind {
	case KindNull:
		return append(dst, "null"...), nil
	case KindBool:
		if v.flags&flagTrue != 0 {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case KindNumber:
		if v.flags&flagInt != 0 {
			// Re-formatting instead of copying the literal turns "-0" into
			// 0 as PHP does; for every other int literal it is identical.
			return strconv.AppendInt(dst, int64(v.bits), 10), nil
		}
		f := math.Float64frombits(v.bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, ErrInfOrNaN
		}
		return appendFloat(dst, f), nil
	case KindString:
		return appendString(dst, v.str, false)
	case KindList:
		if depth >= maxEncodeDepth {
			return dst, ErrDepth
		}
		return appendList(dst, v.elems(), depth+1)
	case KindObject:
		if depth >= maxEncodeDepth {
			return dst, ErrDepth
		}
		o := v.obj
		if o.isList() {
			// A PHP array keyed 0..n-1 (including the empty array) is a
			// list, whatever JSON it was decoded from.
			dst = append(dst, '[')
			for i, m := range o.members {
				if i > 0 {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = appendValue(dst, m.value, depth+1); err != nil {
					return dst, err
				}
			}
			return append(dst, ']'), nil
		}
		dst = append(dst, '{')
		for i, m := range o.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendString(dst, m.key, false); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, m.value, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, errors.New("phpjson: invalid Value kind " + v.kind.String())
}

func appendList(dst []byte, list []Value, depth int) ([]byte, error) {
	dst = slices.Grow(dst, listSizeHint(list))
	dst = append(dst, '[')
	for i, e := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendValue(dst, e, depth); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// listSizeHint estimates the bytes a long list of scalars encodes to, so
// its encoding grows dst once: append alone grows a large slice by a
// quarter at a time, so the 14 MB state of a for_each over 1,000,000
// items allocated about five times its size, all of it garbage but the
// last copy. It samples a few elements spread over the list; a short list,
// or one whose samples are arrays (their size is anyone's guess), gets no
// hint (0).
func listSizeHint(list []Value) int {
	const minLen, samples = 1024, 32
	if len(list) < minLen {
		return 0
	}
	sum := 0
	step := len(list) / samples
	for i := 0; i < samples; i++ {
		n := scalarSize(list[i*step])
		if n < 0 {
			return 0
		}
		sum += n + 1 // and its comma
	}
	// An eighth more for the samples' misses (longer strings, escapes).
	return sum*len(list)/samples + sum*len(list)/samples/8
}

// scalarSize is about the encoded size of a scalar, -1 for an array.
func scalarSize(v Value) int {
	switch v.kind {
	case KindNull, KindBool:
		return 5
	case KindNumber:
		if v.flags&flagInt != 0 {
			n, u := 1, int64(v.bits)
			if u < 0 {
				n, u = 2, -u
			}
			for ; u >= 10; u /= 10 {
				n++
			}
			return n
		}
		return 20
	case KindString:
		return len(v.str) + 2
	}
	return -1
}

// EncodeString returns the JSON string literal PHP writes for s. Invalid
// UTF-8 cannot make it fail: each invalid sequence becomes \ufffd, exactly
// as json_encode($s, JSON_INVALID_UTF8_SUBSTITUTE) does (plain json_encode
// would return false). Use AppendString to get an error instead.
func EncodeString(s string) []byte {
	out, _ := appendString(make([]byte, 0, len(s)+2), s, true)
	return out
}

// AppendString appends the JSON string literal PHP writes for s, failing
// with ErrInvalidUTF8 (dst unchanged in length) like json_encode does.
func AppendString(dst []byte, s string) ([]byte, error) {
	out, err := appendString(dst, s, false)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// plainASCII[c] is true for the ASCII bytes json_encode copies unchanged.
// PHP escapes "/" but not < > & ' or DEL (0x7f).
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '/'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

func appendString(dst []byte, s string, substitute bool) ([]byte, error) {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending plain text, copied in one go
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\', '/':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			if !substitute {
				return dst, ErrInvalidUTF8
			}
			r, n = utf8.RuneError, invalidLen(s[i:])
		}
		if r >= 0x10000 {
			hi, lo := 0xd800+(r-0x10000)>>10, 0xdc00+(r-0x10000)&0x3ff
			dst = appendEscapeU(appendEscapeU(dst, hi), lo)
		} else {
			dst = appendEscapeU(dst, r)
		}
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

func appendEscapeU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// invalidLen returns how many bytes PHP's UTF-8 reader (php_next_utf8_char,
// which follows UTR #36 strategy 2) skips for the invalid sequence at the
// start of s, so that substitution emits as many \ufffd as PHP. Go's
// decoder would skip a single byte every time, PHP skips up to the next
// byte that could start a sequence (or the end), at most the length
// announced by the lead byte.
func invalidLen(s string) int {
	var size int
	switch c := s[0]; {
	case c < 0xc2 || c > 0xf4: // continuation byte or never valid
		return 1
	case c < 0xe0:
		size = 2
	case c < 0xf0:
		size = 3
	default:
		size = 4
	}
	for i := 1; i < size; i++ {
		if i >= len(s) || s[i] < 0x80 || (s[i] >= 0xc2 && s[i] <= 0xf4) {
			return i
		}
	}
	// Every byte was a continuation (the sequence is overlong, a surrogate
	// or above U+10FFFF) or can never be valid: PHP drops them all.
	return size
}

// appendFloat writes f the way PHP does with serialize_precision = -1:
// php_gcvt(f, 17, '.', 'e') over the shortest round-trip digits
// (zend_dtoa mode 0). Go's shortest formatting picks the same digits, so
// only the layout differs: PHP uses plain notation for decimal exponents
// -4..16, never prints ".0" there, and in exponent form always prints at
// least one fractional digit and no exponent padding ("1.0e+25", "5.0e-324").
func appendFloat(dst []byte, f float64) []byte {
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±dd
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	e := len(s) - 1
	for s[e] != 'e' {
		e--
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	// digits holds the significant digits without the point; Go prints
	// "0e+00" for zero, which gives digits "0" as zend_dtoa does.
	var digitsBuf [20]byte
	digits := append(digitsBuf[:0], s[0])
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	decpt := exp + 1 // value = 0.DIGITS × 10^decpt, zend_dtoa's convention

	switch {
	case decpt < -3 || decpt > 17:
		dst = append(dst, digits[0], '.')
		if len(digits) == 1 {
			dst = append(dst, '0')
		} else {
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	case decpt <= 0:
		dst = append(dst, '0', '.')
		for ; decpt < 0; decpt++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case len(digits) <= decpt:
		dst = append(dst, digits...)
		for i := len(digits); i < decpt; i++ {
			dst = append(dst, '0')
		}
		return dst
	default:
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		return append(dst, digits[decpt:]...)
	}
}

// UnescapeSlashes turns PHP's `\/` escapes back into `/`
// (JSON_UNESCAPED_SLASHES), leaving every other escape alone.
func UnescapeSlashes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) {
			if b[i+1] == '/' {
				out = append(out, '/')
			} else {
				out = append(out, b[i], b[i+1])
			}
			i++
			continue
		}
		out = append(out, b[i])
	}
	return out
}
