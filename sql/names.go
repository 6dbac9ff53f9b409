package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NameKind is one kind of name the plugin's tables hold, with the width
// of its column (the DDL in schema/queuety.sql, VARCHAR(n) being n
// characters in utf8mb4).
type NameKind struct {
	// Field is what a message calls it ("queue").
	Field string
	// MaxChars is the column's width.
	MaxChars int
}

// The names every door (Go API, HTTP worker API, CLI, dashboard) checks
// with CheckName before they reach SQL, a URL or a page.
var (
	QueueName    = NameKind{Field: "queue", MaxChars: 64}          // jobs.queue, queue_states.queue
	HandlerName  = NameKind{Field: "handler", MaxChars: 255}       // jobs.handler, logs.handler
	WorkflowName = NameKind{Field: "workflow name", MaxChars: 255} // workflows.name
	SignalName   = NameKind{Field: "signal", MaxChars: 255}        // signals.signal_name
)

// Reason codes of a NameError (the HTTP API answers them as the field
// error's reason).
const (
	NameEmpty        = "name_empty"
	NameTooLong      = "name_too_long"
	NameInvalidUTF8  = "name_invalid_utf8"
	NameControlChars = "name_control_character"
)

// ErrInvalidName is what every NameError Is.
var ErrInvalidName = errors.New("invalid name")

// NameError says why a name was refused. Its message quotes at most a
// short prefix of the name: a 100 KB name must not become a 100 KB error.
type NameError struct {
	Kind   NameKind
	Reason string // NameEmpty, NameTooLong, NameInvalidUTF8, NameControlChars
	Name   string
}

func (e *NameError) Error() string {
	q := QuotePrefix(e.Name, 40)
	switch e.Reason {
	case NameEmpty:
		return fmt.Sprintf("%s name is empty", e.Kind.Field)
	case NameTooLong:
		return fmt.Sprintf("%s %s: longer than %d characters (%d; the plugin's column holds %d)",
			e.Kind.Field, q, e.Kind.MaxChars, utf8.RuneCountInString(e.Name), e.Kind.MaxChars)
	case NameInvalidUTF8:
		return fmt.Sprintf("%s %s: not valid UTF-8", e.Kind.Field, q)
	default:
		return fmt.Sprintf("%s %s: holds a control character (NUL, ESC, newline, tab, DEL, …)", e.Kind.Field, q)
	}
}

// Is makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// CheckName applies the rules every name meets: not blank, valid UTF-8,
// at most Kind.MaxChars characters (what the column holds, so the server
// never answers "Data too long"), and no control character (Unicode Cc:
// C0 including NUL, TAB, CR, LF and ESC, DEL, C1), which would forge log
// lines, terminal output and metric labels. A name is data: these rules
// do not make it safe for a URL or a page, its escaping there does.
func CheckName(k NameKind, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return &NameError{Kind: k, Reason: NameEmpty, Name: s}
	case !utf8.ValidString(s):
		return &NameError{Kind: k, Reason: NameInvalidUTF8, Name: s}
	case utf8.RuneCountInString(s) > k.MaxChars:
		return &NameError{Kind: k, Reason: NameTooLong, Name: s}
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return &NameError{Kind: k, Reason: NameControlChars, Name: s}
	}
	return nil
}

// QuotePrefix quotes s (Go syntax, control bytes escaped), cut to its
// first n characters and marked "…" when longer: messages that repeat
// what a caller sent stay short whatever it sent.
func QuotePrefix(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	i, c := 0, 0
	for i = range s {
		if c == n {
			break
		}
		c++
	}
	return fmt.Sprintf("%q…", s[:i])
}
