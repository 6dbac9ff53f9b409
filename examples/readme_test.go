// Package examples holds the Go code of the README and docs/ as whole
// programs, one directory each, built and tested against the public API as
// a user's module meets it. This test keeps the pages and the files the
// same.
package examples

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// link is a page's link to an example file: [`examples/x/main.go`](…).
var link = regexp.MustCompile("`examples/([^`]+\\.go)`")

// Every ```go block of the README and of docs/*.md is a file of this
// module, byte for byte: the one the text before it links to, since the
// last block or heading. A block with no link, a link to a missing file or
// a block that differs from its file fails, naming the page's line.
func TestReadmeGoBlocksAreTheExampleFiles(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, page := range append([]string{filepath.Join("..", "README.md")}, pages...) {
		blocks += checkGoBlocks(t, page)
	}
	if blocks < 3 {
		t.Fatalf("README.md and docs/ have %d Go blocks: are they the pages?", blocks)
	}
}

// checkGoBlocks checks one page's Go blocks and returns how many it has.
func checkGoBlocks(t *testing.T, page string) int {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(filepath.ToSlash(page), "../")
	lines := strings.SplitAfter(string(src), "\n")
	var linked string // the example file the text since the last block names
	blocks := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "#"):
			linked = ""
		case strings.TrimSpace(line) == "```go":
			start := i + 1
			var body strings.Builder
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body.WriteString(lines[i])
			}
			blocks++
			if linked == "" {
				t.Errorf("%s:%d: a Go block whose text links no example file: keep it as a whole program in examples/ and link it", name, start)
				continue
			}
			want, err := os.ReadFile(filepath.FromSlash(linked))
			if err != nil {
				t.Errorf("%s:%d: %v", name, start, err)
			} else if got := body.String(); got != string(want) {
				t.Errorf("%s:%d: the Go block differs from examples/%s: %s", name, start, linked, firstDifference(got, string(want)))
			}
			linked = ""
		default:
			if m := link.FindAllStringSubmatch(line, -1); m != nil {
				linked = m[len(m)-1][1]
			}
		}
	}
	return blocks
}

// firstDifference names the first line where the README's block (got) and
// the file (want) part.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the file is %q, the README has %q", i+1, wl, gl)
		}
	}
	return "same lines"
}
