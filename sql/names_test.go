package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckNameRules: the review's hostile names (N1, N14, N18) are
// either plain data (path-like, markup) or refused with a reason code,
// and a refusal quotes at most a short prefix.
func TestCheckNameRules(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"default", "emails/high", "a%2Fb", "../workflows/7/approve?", `"><img src=x onerror=alert(1)>`, "ü" + strings.Repeat("é", 63), "?", ".."} {
		require.NoError(t, CheckName(QueueName, ok), ok)
	}
	for name, reason := range map[string]string{
		"":                      NameEmpty,
		"   ":                   NameEmpty,
		strings.Repeat("q", 65): NameTooLong,
		strings.Repeat("é", 65): NameTooLong,
		"nul\x00q":              NameControlChars,
		"esc\x1b[2J":            NameControlChars,
		"tab\tq":                NameControlChars,
		"line\nq":               NameControlChars,
		"del\x7f":               NameControlChars,
		"c1\u0085":              NameControlChars,
		"bad\xffutf8":           NameInvalidUTF8,
	} {
		err := CheckName(QueueName, name)
		var ne *NameError
		require.ErrorAs(t, err, &ne, "%q", name)
		require.Equal(t, reason, ne.Reason, "%q", name)
		require.True(t, errors.Is(err, ErrInvalidName))
	}
	require.NoError(t, CheckName(SignalName, strings.Repeat("s", 255)))
	err := CheckName(SignalName, strings.Repeat("s", 300))
	require.ErrorContains(t, err, "longer than 255 characters")
	require.Less(t, len(err.Error()), 200, "the message quotes a prefix, not 300 characters")
}
