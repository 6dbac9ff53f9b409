package store

import (
	"database/sql"
	"strings"
	"unicode/utf8"
)

// Column sizes of the strings the daemon writes. The plugin's tables are
// utf8mb4: a TEXT column holds 65,535 bytes, a VARCHAR(n) n characters.
const (
	TextBytes = 65535
	// fitMark ends a value that was cut to fit, so a reader knows it is not
	// whole.
	fitMark = "…"
)

// FitText returns s as a TEXT column can hold it: valid UTF-8 (invalid
// bytes become U+FFFD, as the plugin's rows show them) and at most
// TextBytes bytes, cut on a character boundary and marked with "…".
//
// Every error message and trace goes through it: with the server's default
// STRICT_TRANS_TABLES a value one byte too long is refused, and the write
// that carried it (a failure, a log row) would be lost with it.
func FitText(s string) string { return fitBytes(s, TextBytes) }

// FitChars returns s as a VARCHAR(n) column can hold it: valid UTF-8, at
// most n characters, marked with "…" when cut.
func FitChars(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + fitMark
}

// fitBytes cuts s to at most n bytes on a character boundary.
func fitBytes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len(fitMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fitMark
}

// fitClass fits logs.error_class, a VARCHAR(255).
func fitClass(s string) string { return FitChars(s, 255) }

// fitNull applies fit to a set string.
func fitNull(v sql.NullString, fit func(string) string) sql.NullString {
	if v.Valid {
		v.String = fit(v.String)
	}
	return v
}

// fitStepName fits workflow_events.step_name, a VARCHAR(191).
func fitStepName(s string) string { return FitChars(s, 191) }

// fitShort fits the VARCHAR(64) columns: queue, step_type.
func fitShort(s string) string { return FitChars(s, 64) }
