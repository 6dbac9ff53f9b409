package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// module is the module's path and directory.
const module = "github.com/queuety-go/queuety"

// listed is one package as `go list -json` describes it.
type listed struct {
	ImportPath     string
	Name           string
	Doc            string
	Dir            string
	GoFiles        []string
	IgnoredGoFiles []string
	Imports        []string
	Deps           []string
	TestImports    []string
	Export         string
	Standard       bool
}

// goList runs `go list -json` with args in the module's directory and
// decodes the stream of packages it prints.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Dir = moduleDir(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

var moduleDirOnce = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	return strings.TrimSpace(string(out)), err
})

// moduleDir is the module's root directory.
func moduleDir(t *testing.T) string {
	t.Helper()
	dir, err := moduleDirOnce()
	if err != nil || dir == "" {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return dir
}

// rel is a package path relative to the module ("workflow", "internal/x").
func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// ours reports whether path is one of the module's packages.
func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// internalPath reports whether an import path has an internal element, so
// that code outside its parent cannot import it.
func internalPath(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if el == "internal" {
			return true
		}
	}
	return false
}
