// Package wpconfig reads the database settings out of a WordPress
// wp-config.php.
//
// Load evaluates the file with php-cli when there is one (php.go): the
// constants are what WordPress would see, whatever computes them. Without
// php, and in Parse and ParseFile, the file is scanned with a small PHP lexer (comments, inline HTML and all
// string forms are understood), and only literal values are taken:
//
//	define( 'DB_NAME', 'wordpress' );   // or "..." with PHP escapes
//	$table_prefix = 'wp_';
//
// Anything computed at run time (getenv(), concatenation, constants,
// "$interpolated" strings, heredocs) cannot be known statically. Such a
// value is an error for the settings the daemon cannot do without (DB_NAME,
// DB_USER, DB_HOST, DB_PASSWORD if defined, $table_prefix and the
// QUEUETY_TABLE_* constants, which choose table names) and is otherwise
// ignored. DB_NAME, DB_USER and DB_HOST must be defined; DB_PASSWORD may be
// absent or empty. Control flow is not evaluated: like PHP's define(), the
// first define() of a constant in the file wins, and the last assignment to
// $table_prefix anywhere in the file wins.
package wpconfig

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Settings are the values found in a wp-config.php.
type Settings struct {
	DBName, DBUser, DBPassword, DBHost string // raw values from define(); DB_PASSWORD may be absent or ""
	DBCharset                          string // DB_CHARSET if defined as a literal, else ""

	// TablePrefix is $table_prefix, "wp_" when absent. It is the base
	// prefix; on multisite, subsites use TablePrefix + "<blog_id>_".
	TablePrefix string

	// QueuetyTablePrefix is the raw QUEUETY_TABLE_PREFIX (not trimmed or
	// normalized), nil when not defined.
	QueuetyTablePrefix *string

	// Defines holds every define() in the file whose name and value are
	// string literals (first definition wins), e.g. the per-table
	// QUEUETY_TABLE_JOBS overrides. Non-literal defines are absent, except
	// that a non-literal QUEUETY_TABLE_* define is an error.
	Defines map[string]string

	// Constants holds every define() whose value is a literal of any PHP
	// type (strings, numbers, booleans, null, flat arrays), for the
	// plugin's QUEUETY_* settings (constants.go).
	Constants map[string]Constant

	// Reader says how Load read the file ("" from Parse and ParseFile).
	Reader Reader
}

// hint is appended to errors about the connection settings.
const hint = "; pass --dsn instead"

// ParseFile reads and parses the wp-config.php at path. Errors are prefixed
// with path.
func ParseFile(path string) (Settings, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, fmt.Errorf("reading wp-config: %w", err)
	}
	return parse(path, src, true)
}

// Parse parses the source of a wp-config.php. Errors are prefixed with
// "wp-config.php".
func Parse(src []byte) (Settings, error) { return parse("wp-config.php", src, true) }

// binding is an expression assigned to a name; expr is empty for a define()
// whose name was a literal but whose value we could not delimit.
type binding struct {
	expr []token
	at   int // source offset, for line numbers
}

// scanned is what scan finds: the first define() of each constant and the
// last assignment to $table_prefix.
type scanned struct {
	consts map[string]binding
	prefix *binding
}

func scan(src []byte) scanned {
	toks := lex(src)
	consts := map[string]binding{}
	var prefix *binding
	isP := func(i int, s string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == kPunct && toks[i].text == s
	}
	for i, t := range toks {
		switch {
		case t.kind == kIdent && strings.EqualFold(t.text, "define") && isP(i+1, "(") &&
			!isP(i-1, "->") && !isP(i-1, "::") && !(i > 0 && toks[i-1].kind == kIdent && strings.EqualFold(toks[i-1].text, "function")):
			args, _ := callArgs(toks, i+1)
			if len(args) < 2 || len(args[0]) != 1 || args[0][0].kind != kStr || args[0][0].err != nil {
				continue
			}
			if _, seen := consts[args[0][0].text]; !seen { // a second define() is a no-op in PHP
				consts[args[0][0].text] = binding{args[1], t.start}
			}
		case t.kind == kVar && t.text == "table_prefix" && isP(i+1, "=") && !isP(i-1, "::") && !isP(i-1, "$"):
			end, depth := i+2, 0
			for ; end < len(toks) && (depth > 0 || !isP(end, ";")); end++ {
				depth += nesting(toks[end])
			}
			prefix = &binding{toks[i+2 : end], t.start}
		}
	}
	return scanned{consts, prefix}
}

// parse is the literal reader. needDB is false when the caller has the
// DSN from elsewhere: the DB_* constants are then neither required nor
// checked.
func parse(name string, src []byte, needDB bool) (Settings, error) {
	found := scan(src)
	consts, prefix := found.consts, found.prefix
	e := &evaluator{name: name, src: src}
	s := Settings{TablePrefix: "wp_", Defines: map[string]string{}}
	for _, f := range s.dbFields() {
		b, ok := consts[f.name]
		if !needDB {
			continue
		}
		if !ok {
			if f.required {
				return Settings{}, fmt.Errorf("%s: %s is not defined%s", name, f.name, hint)
			}
			continue
		}
		v, err := e.literal(f.name, b)
		if err != nil {
			return Settings{}, fmt.Errorf("%w%s", err, hint)
		}
		*f.dst = v
	}
	for k, b := range consts {
		v, err := e.literal(k, b)
		if err != nil {
			if strings.HasPrefix(k, "QUEUETY_TABLE_") {
				return Settings{}, err
			}
			continue
		}
		s.Defines[k] = v
	}
	s.Constants = e.constants(consts)
	s.DBCharset = s.Defines["DB_CHARSET"]
	if v, ok := s.Defines["QUEUETY_TABLE_PREFIX"]; ok {
		s.QueuetyTablePrefix = &v
	}
	if prefix != nil {
		v, err := e.literal("$table_prefix", *prefix)
		if err != nil {
			return Settings{}, err
		}
		if err := checkPrefix(name, e.line(prefix.at), v); err != nil {
			return Settings{}, err
		}
		s.TablePrefix = v
	}
	return s, nil
}

// checkPrefix refuses a $table_prefix WordPress would refuse; line 0 is
// unknown.
func checkPrefix(name string, line int, v string) error {
	if strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == "" {
		return nil
	}
	if line > 0 {
		name += ":" + strconv.Itoa(line)
	}
	return fmt.Errorf("%s: $table_prefix %q can only contain numbers, letters, and underscores", name, v)
}

func nesting(t token) int {
	if t.kind == kPunct {
		switch t.text {
		case "(", "[", "{":
			return 1
		case ")", "]", "}":
			return -1
		}
	}
	return 0
}

// callArgs splits the arguments of the call whose '(' is toks[open] at
// top-level commas and returns them with the index of the closing ')'. It
// returns nil, -1 if the parenthesis is never closed.
func callArgs(toks []token, open int) ([][]token, int) {
	var args [][]token
	from, depth := open+1, 0
	for j := open; j < len(toks); j++ {
		depth += nesting(toks[j])
		switch {
		case depth == 0:
			return append(args, toks[from:j]), j
		case depth == 1 && toks[j].kind == kPunct && toks[j].text == ",":
			args = append(args, toks[from:j])
			from = j + 1
		}
	}
	return nil, -1
}

type evaluator struct {
	name string
	src  []byte
}

func (e *evaluator) line(off int) int { return 1 + strings.Count(string(e.src[:off]), "\n") }

// literal returns the value of b if it is a single plain string literal.
func (e *evaluator) literal(what string, b binding) (string, error) {
	if len(b.expr) == 1 && b.expr[0].kind == kStr && b.expr[0].err == nil {
		return b.expr[0].text, nil
	}
	desc := e.describe(b.expr)
	if secret(what) {
		desc = construct(b.expr)
	}
	return "", fmt.Errorf("%s:%d: %s is not a string literal (%s)", e.name, e.line(b.at), what, desc)
}

// secret reports whether a constant's value must never appear in a
// message: the database login, and WordPress's keys and salts.
func secret(name string) bool {
	n := strings.ToUpper(name)
	return n == "DB_USER" || strings.Contains(n, "PASSWORD") || strings.Contains(n, "SECRET") ||
		strings.Contains(n, "TOKEN") || strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_SALT")
}

// construct names the kind of a non-literal expression without any of its
// text but function and constant names, for the values of secrets.
func construct(expr []token) string {
	isP := func(t token, s ...string) bool { return t.kind == kPunct && slices.Contains(s, t.text) }
	switch {
	case len(expr) == 0:
		return "empty"
	case len(expr) == 1 && expr[0].kind == kStr && expr[0].err != nil:
		switch msg := expr[0].err.Error(); {
		case strings.Contains(msg, "interpolation"):
			return "an interpolated string"
		case strings.Contains(msg, "heredoc"):
			return "a heredoc"
		}
		return "a string the literal reader cannot read"
	case len(expr) == 1 && expr[0].kind == kIdent:
		return "the constant " + expr[0].text
	case len(expr) >= 2 && expr[0].kind == kIdent && isP(expr[1], "("):
		if _, end := callArgs(expr, 1); end == len(expr)-1 {
			return expr[0].text + "(...)"
		}
	}
	for _, t := range expr {
		if isP(t, ".") {
			return "a concatenation"
		}
	}
	return "an expression"
}

// describe gives a short rendering of a non-literal expression for errors.
func (e *evaluator) describe(expr []token) string {
	switch {
	case len(expr) == 0:
		return "empty"
	case len(expr) >= 2 && expr[0].kind == kIdent && expr[1].kind == kPunct && expr[1].text == "(":
		if _, end := callArgs(expr, 1); end == len(expr)-1 { // the whole expression is one call
			return expr[0].text + "(...)"
		}
	}
	src := strings.Join(strings.Fields(string(e.src[expr[0].start:expr[len(expr)-1].end])), " ")
	if r := []rune(src); len(r) > 40 {
		src = string(r[:37]) + "..."
	}
	if len(expr) == 1 && expr[0].err != nil {
		return src + ": " + expr[0].err.Error()
	}
	return src
}

// dbField is one of the database constants a Settings is built from; both
// readers (the PHP run and the literal one) walk the same list.
type dbField struct {
	name     string
	dst      *string
	required bool
}

func (s *Settings) dbFields() []dbField {
	return []dbField{
		{"DB_NAME", &s.DBName, true},
		{"DB_USER", &s.DBUser, true},
		{"DB_PASSWORD", &s.DBPassword, false},
		{"DB_HOST", &s.DBHost, true},
	}
}
