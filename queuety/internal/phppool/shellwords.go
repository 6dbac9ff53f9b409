package phppool

import (
	"fmt"
	"strings"
)

// SplitCommand splits a command line the way a POSIX shell splits words,
// without expanding anything: blanks separate words, 'single quotes' keep
// everything literally, "double quotes" keep everything but \" \\ \$ \`
// and backslash-newline, and a backslash outside quotes escapes the next
// character. `php bin/worker --bootstrap "/srv/my app/app.php"` gives four
// words. Variables, globs and operators are not interpreted. It works on
// bytes (every special character is ASCII), so words that are not UTF-8,
// such as a path in another encoding, keep their bytes.
func SplitCommand(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   byte // 0, '\'' or '"'
		escaped bool
	)
	for i := 0; i < len(s); i++ {
		r := s[i]
		switch {
		case escaped:
			escaped = false
			if quote == '"' && strings.IndexByte("\"\\$`\n", r) < 0 {
				cur.WriteByte('\\') // inside "..." other backslashes stay
			}
			if r != '\n' {
				cur.WriteByte(r)
			}
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteByte(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteByte(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	case escaped:
		return nil, fmt.Errorf("trailing backslash in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}
