package wpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A small PHP lexer: just enough to find define() calls and $table_prefix
// assignments while skipping comments, inline HTML and every kind of string
// correctly. It never fails; problems with a string literal are recorded on
// the token and only reported if that string turns out to matter.

type kind int

const (
	kEOF kind = iota
	kIdent
	kVar // $name; text is the name without '$'
	kStr
	kNum
	kPunct
)

type token struct {
	kind       kind
	text       string // identifier, variable name, punctuation or decoded string value
	start, end int    // byte offsets in the source
	err        error  // kStr only: why the string is not a plain literal
}

type lexer struct {
	src []byte
	pos int
	php bool // inside <?php ... ?>
}

func lex(src []byte) []token {
	l := &lexer{src: src}
	var toks []token
	for {
		t := l.next()
		if t.kind == kEOF {
			return toks
		}
		toks = append(toks, t)
	}
}

func (l *lexer) peek(n int) byte {
	if l.pos+n < len(l.src) {
		return l.src[l.pos+n]
	}
	return 0
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func (l *lexer) next() token {
	for {
		if !l.php { // inline HTML up to the next open tag
			i := bytes.Index(l.src[l.pos:], []byte("<?"))
			if i < 0 {
				l.pos = len(l.src)
				return token{kind: kEOF, start: l.pos, end: l.pos}
			}
			l.pos += i + 2
			if rest := l.src[l.pos:]; len(rest) >= 3 && strings.EqualFold(string(rest[:3]), "php") {
				l.pos += 3
			} else if l.peek(0) == '=' {
				l.pos++
			}
			l.php = true
			continue
		}
		if l.pos >= len(l.src) {
			return token{kind: kEOF, start: l.pos, end: l.pos}
		}
		start, c := l.pos, l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#' || c == '/' && l.peek(1) == '/':
			// A line comment ends at a newline or just before "?>".
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && (l.src[l.pos] != '?' || l.peek(1) != '>') {
				l.pos++
			}
		case c == '/' && l.peek(1) == '*':
			if i := bytes.Index(l.src[l.pos+2:], []byte("*/")); i >= 0 {
				l.pos += 2 + i + 2
			} else {
				l.pos = len(l.src)
			}
		case c == '?' && l.peek(1) == '>': // close tag acts as ';'
			l.pos += 2
			l.php = false
			return token{kind: kPunct, text: ";", start: start, end: l.pos}
		case c == '$' && isIdentStart(l.peek(1)):
			l.pos++
			t := l.word(kVar)
			t.start = start
			return t
		case isIdentStart(c):
			return l.word(kIdent)
		case c >= '0' && c <= '9':
			for l.pos < len(l.src) && (isIdentChar(l.src[l.pos]) || l.src[l.pos] == '.') {
				l.pos++
			}
			return token{kind: kNum, text: string(l.src[start:l.pos]), start: start, end: l.pos}
		case c == '\'':
			return l.singleQuoted()
		case c == '"' || c == '`':
			return l.doubleQuoted(c)
		case bytes.HasPrefix(l.src[l.pos:], []byte("<<<")):
			if t, ok := l.heredoc(); ok {
				return t
			}
			l.pos++
			return token{kind: kPunct, text: "<", start: start, end: l.pos}
		default:
			l.pos++
			if op := string(l.src[start:min(start+2, len(l.src))]); op == "->" || op == "::" || op == "==" || op == "=>" {
				l.pos++
			}
			return token{kind: kPunct, text: string(l.src[start:l.pos]), start: start, end: l.pos}
		}
	}
}

func (l *lexer) word(k kind) token {
	start := l.pos
	for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
		l.pos++
	}
	return token{kind: k, text: string(l.src[start:l.pos]), start: start, end: l.pos}
}

// singleQuoted: only \\ and \' are escapes.
func (l *lexer) singleQuoted() token {
	start := l.pos
	var b strings.Builder
	for i := start + 1; i < len(l.src); i++ {
		c := l.src[i]
		switch {
		case c == '\\' && i+1 < len(l.src) && (l.src[i+1] == '\\' || l.src[i+1] == '\''):
			i++
			b.WriteByte(l.src[i])
		case c == '\'':
			l.pos = i + 1
			return token{kind: kStr, text: b.String(), start: start, end: l.pos}
		default:
			b.WriteByte(c)
		}
	}
	l.pos = len(l.src)
	return token{kind: kStr, start: start, end: l.pos, err: errors.New("unterminated string")}
}

// doubleQuoted handles "..." (PHP escapes; interpolation is detected, skipped
// and flagged) and `...` (shell command, always flagged).
func (l *lexer) doubleQuoted(q byte) token {
	start, src := l.pos, l.src
	var b strings.Builder
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	if q == '`' {
		fail(errors.New("backtick shell command"))
	}
	for i := start + 1; i < len(src); {
		c := src[i]
		var nc byte
		if i+1 < len(src) {
			nc = src[i+1]
		}
		switch {
		case c == q:
			l.pos = i + 1
			return token{kind: kStr, text: b.String(), start: start, end: l.pos, err: err}
		case c == '\\' && i+1 < len(src):
			n, e := escape(&b, src[i:], q)
			if e != nil {
				fail(e)
			}
			i += n
		case c == '$' && isIdentStart(nc), c == '$' && nc == '{', c == '{' && nc == '$':
			j := i + 1 + boolInt(c == '{')
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			fail(fmt.Errorf("variable interpolation %q is not supported", src[i:max(j, i+2)]))
			if c == '{' || nc == '{' {
				i = l.skipBraced(i + boolInt(c == '$'))
			} else {
				i = j
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	l.pos = len(src)
	return token{kind: kStr, start: start, end: l.pos, err: errors.New("unterminated string")}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// skipBraced lexes PHP code from src[open] == '{' to its matching '}' (the
// "{$expr}" and "${expr}" forms, which may contain nested quoted strings)
// and returns the offset after it.
func (l *lexer) skipBraced(open int) int {
	l.pos = open + 1
	for depth := 0; ; {
		t := l.next()
		switch {
		case t.kind == kEOF:
			return l.pos
		case t.kind == kPunct && t.text == "{":
			depth++
		case t.kind == kPunct && t.text == "}":
			if depth == 0 {
				return l.pos
			}
			depth--
		}
		l.php = true
	}
}

// escape decodes one backslash escape at s[0] == '\\' of a double-quoted
// string, writes it to b and returns how many bytes it consumed.
func escape(b *strings.Builder, s []byte, q byte) (int, error) {
	c := s[1]
	if i := strings.IndexByte("ntrvef\\$", c); i >= 0 || c == q {
		if i >= 0 {
			c = "\n\t\r\v\x1b\f\\$"[i]
		}
		b.WriteByte(c)
		return 2, nil
	}
	digits := func(from, maxN int, ok func(byte) bool) string {
		n := 0
		for from+n < len(s) && n < maxN && ok(s[from+n]) {
			n++
		}
		return string(s[from : from+n])
	}
	isOct := func(c byte) bool { return c >= '0' && c <= '7' }
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f' }
	if d := digits(1, 3, isOct); d != "" {
		v, _ := strconv.ParseUint(d, 8, 16)
		b.WriteByte(byte(v)) // PHP wraps "\400" to "\000"
		return 1 + len(d), nil
	}
	if d := digits(2, 2, isHex); c == 'x' && d != "" {
		v, _ := strconv.ParseUint(d, 16, 8)
		b.WriteByte(byte(v))
		return 2 + len(d), nil
	}
	if c == 'u' && len(s) > 2 && s[2] == '{' {
		d := digits(3, 6, isHex)
		v, _ := strconv.ParseUint(d, 16, 32)
		if d == "" || 3+len(d) >= len(s) || s[3+len(d)] != '}' || !utf8.ValidRune(rune(v)) {
			return 3, errors.New(`invalid \u{...} escape`)
		}
		b.WriteRune(rune(v))
		return 4 + len(d), nil
	}
	b.WriteByte('\\') // unknown escape: the backslash stays, the next byte is read normally
	return 1, nil
}

// heredoc skips <<<LABEL / <<<"LABEL" / <<<'LABEL' ... LABEL. Their contents
// are never treated as a literal here.
func (l *lexer) heredoc() (token, bool) {
	start, src := l.pos, l.src
	i := start + 3
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	quote := byte(0)
	if i < len(src) && (src[i] == '\'' || src[i] == '"') {
		quote = src[i]
		i++
	}
	ls := i
	for i < len(src) && isIdentChar(src[i]) {
		i++
	}
	label := src[ls:i]
	if len(label) == 0 || !isIdentStart(label[0]) {
		return token{}, false
	}
	if quote != 0 {
		if i >= len(src) || src[i] != quote {
			return token{}, false
		}
		i++
	}
	if i < len(src) && src[i] == '\r' {
		i++
	}
	if i >= len(src) || src[i] != '\n' {
		return token{}, false
	}
	for i < len(src) {
		i++ // past '\n'
		j := i
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		if bytes.HasPrefix(src[j:], label) && (j+len(label) == len(src) || !isIdentChar(src[j+len(label)])) {
			l.pos = j + len(label)
			return token{kind: kStr, start: start, end: l.pos, err: errors.New("heredoc/nowdoc is not supported")}, true
		}
		if k := bytes.IndexByte(src[i:], '\n'); k >= 0 {
			i += k
		} else {
			i = len(src)
		}
	}
	l.pos = len(src)
	return token{kind: kStr, start: start, end: l.pos, err: errors.New("unterminated heredoc")}, true
}
