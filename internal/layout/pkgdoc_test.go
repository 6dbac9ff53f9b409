package layout

import "testing"

// TestEveryPackageHasADoc: every package of the module with non-test Go
// files says what it is in a package comment (a doc.go or a comment on
// its package clause), so `go doc` opens on a front page; a package cut
// out of another one comes with its own.
func TestEveryPackageHasADoc(t *testing.T) {
	for _, p := range goList(t, "./...") {
		if len(p.GoFiles) == 0 || p.Doc != "" {
			continue
		}
		t.Errorf("%s: no package doc (add a doc.go, or a comment on the package clause)", p.ImportPath)
	}
}
