package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The user-facing pages: the README and docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

// root is the repository, from this package's directory.
var root = filepath.Join("..", "..")

var (
	mdLink   = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// prose gives a page's lines outside fenced and indented code blocks, with
// inline code spans blanked, numbered from 1.
func prose(src string) map[int]string {
	out := map[int]string{}
	fenced := false
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") && !strings.HasPrefix(trimmed, "-") && !startsNumbered(trimmed) {
			continue
		}
		out[i+1] = codeSpan.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat("x", len(s)) // keeps [`examples/x.go`](…) a link
		})
	}
	return out
}

func startsNumbered(s string) bool {
	i := strings.IndexByte(s, '.')
	_, err := strconv.Atoi(s[:max(i, 0)])
	return i > 0 && err == nil
}

// anchors are the fragment ids GitHub gives a page's headings: lower case,
// punctuation but '-' and '_' dropped, spaces made '-', a repeat suffixed
// -1, -2, ….
func anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsNumber(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// Every relative link of the README and docs/ names a file of the
// repository, and its #fragment a heading of that page.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	links := 0
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		require.NoError(t, err)
		for n, line := range prose(string(src)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				}
				where := page + ":" + strconv.Itoa(n) + ": " + target
				_, err := os.Stat(path)
				if !assertNoError(t, err, where) || frag == "" {
					continue
				}
				require.True(t, strings.HasSuffix(path, ".md"), "%s: a #fragment on a file that is not a page", where)
				dst, err := os.ReadFile(path)
				require.NoError(t, err)
				if !anchors(string(dst))[frag] {
					t.Errorf("%s: %s has no heading with the id %q", where, path, frag)
				}
			}
		}
	}
	require.Greater(t, links, 30, "the pages' links were found")
}

func assertNoError(t *testing.T, err error, where string) bool {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return false
	}
	return true
}

// The README is the page a site owner reads first; the rest is in docs/.
func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.LessOrEqual(t, strings.Count(string(src), "\n"), 300, "README.md: move material to docs/")
}

// The fragment ids follow GitHub's rule, or the link test checks nothing.
func TestAnchors(t *testing.T) {
	t.Parallel()
	got := anchors("# Title\n## The plugin's settings in wp-config.php\n```\n# not a heading\n```\n## Why `work --php` runs 200 slots\n## Batches, chains' catch, state machines\n## Title\n")
	require.Equal(t, map[string]bool{
		"title": true, "the-plugins-settings-in-wp-configphp": true,
		"why-work---php-runs-200-slots": true, "batches-chains-catch-state-machines": true, "title-1": true,
	}, got)
}
