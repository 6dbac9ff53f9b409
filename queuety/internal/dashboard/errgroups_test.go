package dashboard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The variable parts of a message are replaced; the words stay.
func TestNormalizeError(t *testing.T) {
	for in, want := range map[string]string{
		"demo failure 39":                                          "demo failure ‹n›",
		"order 12 of 3,400 not found":                              "order ‹n› of ‹n› not found",
		`user "alice" has no mailbox`:                              "user ‹…› has no mailbox",
		"row 6f1c2a9e-1b2c-4d5e-8f90-a1b2c3d4e5f6 locked":          "row ‹uuid› locked",
		"GET https://api.example.com/v1/items/77?x=1 returned 503": "GET ‹url› returned ‹n›",
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 missing":  "commit ‹id› missing",
		"deadbeef is a word, job42 a number":                       "deadbeef is a word, job‹n› a number",
		"  SMTP timeout  ":                                         "SMTP timeout",
	} {
		require.Equal(t, want, normalizeError(in), in)
	}
}
