package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEsc(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                        "",
		`App\Jobs\SendEmail`:      `App\Jobs\SendEmail`,
		"ünïcødé ✓":               "ünïcødé ✓",
		"\x1b[2J":                 `\x1b[2J`,
		"\x1b]0;title\x07":        `\x1b]0;title\x07`,
		"a\nb\tc\rd":              `a\nb\tc\rd`,
		"nul\x00del\x7f":          `nul\x00del\x7f`,
		"c1 \u009b csi":           `c1 \u009b csi`,
		"bidi \u202eevil\u2066":   `bidi \u202eevil\u2066`,
		"sep\u2028":               `sep\u2028`,
		"bad \xff\xfe utf8":       `bad \xff\xfe utf8`,
		"truncated rune \xe2\x9c": `truncated rune \xe2\x9c`,
	} {
		require.Equal(t, want, esc(in), "%q", in)
	}
	require.Equal(t, []string{`a\n`, "b"}, escAll([]string{"a\n", "b"}))
	require.Nil(t, escPtr(nil))
}
