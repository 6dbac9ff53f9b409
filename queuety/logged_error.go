package queuety

import (
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// maxLoggedError bounds a handler's error in a log line. The row keeps what
// the plugin keeps (error_message is cut to its 64 KiB column); a log line
// of 100 KB per failure would swamp journald and every log shipper, so the
// line carries the start of the text and says how long the whole was.
const maxLoggedError = 8 << 10

// loggedError is a job's error as a log attribute, cut to maxLoggedError
// bytes on a character boundary with a marker naming the full length.
type loggedError struct{ err error }

func (e loggedError) LogValue() slog.Value {
	if e.err == nil {
		return slog.StringValue("<nil>")
	}
	return slog.StringValue(cutForLog(e.err.Error()))
}

func cutForLog(s string) string {
	if len(s) <= maxLoggedError {
		return s
	}
	i := maxLoggedError
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… [cut: %d bytes in all; the job's row holds the error]", len(s))
}
