package layout

import (
	"slices"
	"strings"
	"testing"
)

// The import direction is queuety → internal/steps → internal/engine →
// workflow → internal/… → sql: the engine calls step kinds through the
// interface it defines, so it never depends on internal/steps, and the
// user's API (workflow) never depends on the engine that runs it; only
// the step kinds, the PHP pool (the engine's StepRunner) and the
// composition root (queuety) use the engine. The
// mid-layers under the top-level internal/ never depend on the public
// queuety package they serve (an adapter implementing queuety's
// interfaces, like the PHP pool, lives in queuety/internal/). Only the
// packages' own files count: a test may drive the whole stack.
func TestImportDirection(t *testing.T) {
	rules := []struct {
		from func(string) bool
		to   func(string) bool
		// direct checks the package's own imports rather than everything
		// it depends on (a command that uses queuety reaches the engine
		// through it, and may).
		direct bool
		reason string
	}{
		{
			from:   under("workflow"),
			to:     anyOf(under("internal/engine"), under("internal/steps")),
			reason: "workflow is the user's API: the engine and its step kinds import it, never the reverse",
		},
		{
			from:   under("internal/engine"),
			to:     under("internal/steps"),
			reason: "the engine reaches step kinds through engine.Kind; steps imports the engine, never the reverse",
		},
		{
			// The PHP pool implements the engine's other plug-ins,
			// StepRunner and CallableRunner (the step bodies and callables
			// without Go code), and names them to say so.
			from:   not(anyOf(under("internal/engine"), under("internal/steps"), is("queuety"), is("queuety/internal/phppool"))),
			to:     under("internal/engine"),
			direct: true,
			reason: "the engine is the plug-in interface of the step kinds and of the PHP pool (StepRunner), and the composition root's: only internal/steps, queuety/internal/phppool and queuety import it",
		},
		{
			from:   not(anyOf(under("internal/steps"), is("queuety"))),
			to:     under("internal/steps"),
			direct: true,
			reason: "the step kinds are given to the engine by the composition root (queuety) alone",
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
			deps := p.Deps
			if r.direct {
				deps = p.Imports
			}
			for _, d := range deps {
				if ours(d) && r.to(rel(d)) {
					t.Errorf("%s depends on %s (through %s): %s", rel(p.ImportPath), rel(d), via(p, d, pkgs), r.reason)
				}
			}
		}
	}
}

// The subsystems of queuety/ each have a package (and the state machines
// a public face beside their runtime), and only the composition root,
// queuety, puts them together: below it no package reaches two of them,
// so the machine runtime never imports webhooks, the scheduler never the
// maintenance loops. A package above queuety (the CLI, the dashboard, the
// PHP pool) reaches them all through it, which is the point of the root.
// startstop, the loops' one shape, is shared and not a subsystem.
func TestSubsystemsMeetOnlyInTheRoot(t *testing.T) {
	subsystems := map[string]string{
		"queuety/internal/machine":     "state machines",
		"queuety/machine":              "state machines",
		"queuety/internal/webhooks":    "webhooks",
		"queuety/internal/scheduler":   "schedules",
		"queuety/internal/maintenance": "maintenance",
	}
	pkgs := goList(t, "./...")
	seen := map[string]bool{}
	for _, p := range pkgs {
		if sub, ok := subsystems[rel(p.ImportPath)]; ok {
			seen[sub] = true
		}
	}
	if len(seen) != 4 {
		t.Fatalf("go list found the subsystems %v; a subsystem moved: update this test", seen)
	}
	for _, p := range pkgs {
		path := rel(p.ImportPath)
		if path == "queuety" || slices.Contains(p.Deps, module+"/queuety") {
			continue // the root, or above it
		}
		reached := map[string][]string{}
		if sub, ok := subsystems[path]; ok {
			reached[sub] = append(reached[sub], path)
		}
		for _, d := range p.Deps {
			if sub, ok := subsystems[rel(d)]; ok && ours(d) {
				reached[sub] = append(reached[sub], rel(d))
			}
		}
		if len(reached) > 1 {
			t.Errorf("%s reaches %d subsystems %v: only queuety, the composition root, puts subsystems together; pass what one needs of another through an interface or a params struct built in queuety", path, len(reached), reached)
		}
	}
}

// under matches a package directory and everything below it.
func under(dir string) func(string) bool {
	return func(path string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
}

// is matches one package directory.
func is(dir string) func(string) bool { return func(path string) bool { return path == dir } }

// anyOf matches what any of ms matches.
func anyOf(ms ...func(string) bool) func(string) bool {
	return func(path string) bool {
		for _, m := range ms {
			if m(path) {
				return true
			}
		}
		return false
	}
}

// not matches what m does not.
func not(m func(string) bool) func(string) bool { return func(path string) bool { return !m(path) } }

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
