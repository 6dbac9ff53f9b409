package layout

import (
	"slices"
	"strings"
	"testing"
)

// The import direction is queuety → steps → workflow → internal/… → sql:
// the engine calls step kinds through the interface it defines, so
// workflow never depends on steps, and the mid-layers under the top-level
// internal/ never depend on the public queuety package they serve (an
// adapter implementing queuety's interfaces, like the PHP pool, lives in
// queuety/internal/). Only the packages' own files count: a test may
// drive the whole stack.
func TestImportDirection(t *testing.T) {
	rules := []struct {
		from   func(string) bool
		to     func(string) bool
		reason string
	}{
		{
			from:   under("workflow"),
			to:     under("steps"),
			reason: "the engine reaches step kinds through workflow.Kind; steps imports workflow, never the reverse",
		},
		{
			from:   under("internal"),
			to:     under("queuety"),
			reason: "top-level internal/ packages sit below queuety; move a package that needs queuety under queuety/internal/",
		},
	}
	pkgs := goList(t, "./...")
	if len(pkgs) < 10 {
		t.Fatalf("go list ./... listed %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.from(rel(p.ImportPath)) {
				continue
			}
			for _, d := range p.Deps {
				if ours(d) && r.to(rel(d)) {
					t.Errorf("%s depends on %s (through %s): %s", rel(p.ImportPath), rel(d), via(p, d, pkgs), r.reason)
				}
			}
		}
	}
}

// under matches a package directory and everything below it.
func under(dir string) func(string) bool {
	return func(path string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
}

// via names the direct import of p that leads to dep, for the message.
func via(p listed, dep string, pkgs []listed) string {
	if slices.Contains(p.Imports, dep) {
		return "a direct import"
	}
	for _, imp := range p.Imports {
		for _, q := range pkgs {
			if q.ImportPath == imp && slices.Contains(q.Deps, dep) {
				return rel(imp)
			}
		}
	}
	return "a dependency"
}
