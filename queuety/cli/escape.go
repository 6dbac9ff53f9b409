package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// esc makes a stored string safe to print on an operator's terminal.
// Handler names, queues, error messages, workflow, step and signal names
// are written by whoever can write the tables; printed raw, an ESC
// sequence in one of them could clear the screen, retitle the window or
// forge lines of output. Every C0 and C1 control character, DEL, the
// Unicode line separators and the bidirectional overrides are shown as
// escapes (\n, \t, \r, \x1b, \u009b, \u202e), as are bytes that are not
// UTF-8, so each row stays one line and shows what is stored. Backslashes
// are left alone: PHP class names are full of them. JSON output does not
// use this; encoding/json already escapes control characters.
func esc(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escAll is esc of each string, for lists joined into one cell.
func escAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = esc(s)
	}
	return out
}

// escPtr is esc of an optional string (nil stays nil).
func escPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := esc(*p)
	return &s
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || r < 0x20 || r == 0x7f || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune: C1 controls (0x9b is CSI on 8-bit terminals), the line and
// paragraph separators, and the bidirectional embeddings, overrides and
// isolates that reorder what follows them.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
