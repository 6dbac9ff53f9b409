package layout

import "testing"

// testSupport are the packages only tests import: per-test databases,
// fixtures and environments, fault injectors. None of them is written to
// run in production (they panic, fake time or drop connections), so
// nothing the binary or a user's program links may depend on them.
var testSupport = map[string]bool{
	"internal/testdb":            true,
	"internal/storetest":         true,
	"internal/testbin":           true,
	"internal/commiteater":       true,
	"internal/engine/enginetest": true,
}

func TestTestSupportStaysOutOfTheBinary(t *testing.T) {
	for _, p := range goList(t, "-deps", "./...") {
		if !ours(p.ImportPath) || testSupport[rel(p.ImportPath)] {
			continue
		}
		for _, d := range p.Deps {
			if ours(d) && testSupport[rel(d)] {
				t.Errorf("%s depends on %s, which only tests may import", rel(p.ImportPath), rel(d))
			}
		}
	}
	// The list names real packages: a renamed one would make the rule
	// check nothing.
	listed := map[string]bool{}
	for _, p := range goList(t, "./...") {
		listed[rel(p.ImportPath)] = true
	}
	for p := range testSupport {
		if !listed[p] {
			t.Errorf("test-support package %s does not exist; update testSupport", p)
		}
	}
}
