package layout

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// A user's module cannot import a package under internal/, so it cannot
// name the types declared there: a step handler whose signature names
// *internal/phpjson.Object cannot be written outside this module. Every
// exported identifier of the public packages (funcs, methods, exported
// fields, type definitions, vars and consts) must name only types a user
// can name: declared in a public package, or in an internal one that a
// public package exports an alias of (queuety/phpjson.Object). An aliased
// internal type's own exported methods and fields are held to the same
// rule, since a user reaches them through the alias.
func TestPublicAPINamesPublicTypes(t *testing.T) {
	var public []string
	for _, p := range goList(t, "./...") {
		// A directory of tests alone (deploy/) has no API to check.
		if p.Name != "main" && !internalPath(p.ImportPath) && len(p.GoFiles) > 0 {
			public = append(public, p.ImportPath)
		}
	}
	for _, want := range []string{"queuety", "queuety/cli", "queuety/phpjson", "workflow"} {
		if !slices.Contains(public, module+"/"+want) {
			t.Fatalf("public packages %v lack %s", public, want)
		}
	}
	c := newAPIChecker(t, public)
	for _, path := range public {
		c.checkPackage(c.pkgs[path])
	}
	for _, f := range c.found {
		t.Error(f)
	}
}

// apiChecker walks the exported API of the public packages.
type apiChecker struct {
	pkgs map[string]*types.Package
	// aliased maps an internal type to the public alias users name it by.
	aliased map[*types.TypeName]string
	// expanded are the types whose members were walked already.
	expanded map[*types.TypeName]bool
	found    []string
	reported map[string]bool
	// sealed, when set, is a public package whose types no other public
	// package may name (the storage layer, sql/: storage_test.go).
	sealed string
}

// newAPIChecker loads the public packages from the compiler's export data
// (`go list -export`), which the build cache already holds after `go
// build`: the standard gc importer reads it, no package loader needed.
func newAPIChecker(t *testing.T, public []string) *apiChecker {
	exports := map[string]string{}
	for _, p := range goList(t, append([]string{"-export", "-deps"}, public...)...) {
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	pkgs := map[string]*types.Package{}
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("importing %s: %v", path, err)
		}
		pkgs[path] = pkg
	}
	return checkerFor(pkgs)
}

// checkerFor is the checker of the public packages pkgs, knowing the
// internal types their exported aliases name.
func checkerFor(pkgs map[string]*types.Package) *apiChecker {
	c := &apiChecker{
		pkgs:     pkgs,
		aliased:  map[*types.TypeName]string{},
		expanded: map[*types.TypeName]bool{},
		reported: map[string]bool{},
	}
	for path, pkg := range pkgs {
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() || !tn.IsAlias() {
				continue
			}
			if n, ok := types.Unalias(tn.Type()).(*types.Named); ok && internalPath(pkgPath(n.Obj())) {
				c.aliased[n.Origin().Obj()] = rel(path) + "." + name
			}
		}
	}
	return c
}

func pkgPath(o types.Object) string {
	if o.Pkg() == nil {
		return ""
	}
	return o.Pkg().Path()
}

// checkPackage walks every exported identifier of one public package.
func (c *apiChecker) checkPackage(pkg *types.Package) {
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		ident := rel(pkg.Path()) + "." + name
		switch obj := obj.(type) {
		case *types.TypeName:
			if obj.IsAlias() {
				c.walk(obj.Type(), ident)
				if n, ok := types.Unalias(obj.Type()).(*types.Named); ok {
					c.expand(n)
				}
				continue
			}
			if n, ok := obj.Type().(*types.Named); ok {
				c.expand(n)
			}
		default: // funcs, vars, consts
			c.walk(obj.Type(), ident)
		}
	}
}

// expand walks a named type's exported members once: its underlying
// type's exported fields or methods, and its exported methods.
func (c *apiChecker) expand(n *types.Named) {
	obj := n.Origin().Obj()
	if c.expanded[obj] {
		return
	}
	c.expanded[obj] = true
	ident := c.name(obj)
	if tps := n.TypeParams(); tps != nil {
		for i := range tps.Len() {
			c.walk(tps.At(i).Constraint(), ident)
		}
	}
	c.walkUnderlying(n.Underlying(), ident)
	ms := types.NewMethodSet(types.NewPointer(n))
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if m.Exported() {
			c.walk(m.Type(), ident+"."+m.Name())
		}
	}
}

// name is how a type is named in a finding: by its package, and by the
// public alias when it is an aliased internal type.
func (c *apiChecker) name(obj *types.TypeName) string {
	n := rel(pkgPath(obj)) + "." + obj.Name()
	if alias, ok := c.aliased[obj]; ok {
		n = alias
	}
	return n
}

// walkUnderlying walks a type literal's visible parts: exported fields
// (and every embedded field's promoted members) and exported interface
// methods; other literals are walked as types.
func (c *apiChecker) walkUnderlying(u types.Type, ident string) {
	switch u := u.(type) {
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				c.walkEmbedded(f.Type(), ident+"."+f.Name())
			case f.Exported():
				c.walk(f.Type(), ident+"."+f.Name())
			}
		}
	case *types.Interface:
		for i := range u.NumExplicitMethods() {
			if m := u.ExplicitMethod(i); m.Exported() {
				c.walk(m.Type(), ident+"."+m.Name())
			}
		}
		for i := range u.NumEmbeddeds() {
			c.walkEmbedded(u.EmbeddedType(i), ident)
		}
	default:
		c.walk(u, ident)
	}
}

// walkEmbedded: an embedded type need not be nameable (an unexported
// embedded struct is a common way to share fields), but what it promotes
// must be.
func (c *apiChecker) walkEmbedded(t types.Type, ident string) {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	t = types.Unalias(t)
	if n, ok := t.(*types.Named); ok && (!n.Obj().Exported() || internalPath(pkgPath(n.Obj()))) && ours(pkgPath(n.Obj())) {
		c.walkUnderlying(n.Underlying(), ident)
		ms := types.NewMethodSet(types.NewPointer(n))
		for i := range ms.Len() {
			if m := ms.At(i).Obj(); m.Exported() {
				c.walk(m.Type(), ident+"."+m.Name())
			}
		}
		return
	}
	c.walk(t, ident)
}

// walk checks every type a signature or type expression names.
func (c *apiChecker) walk(t types.Type, ident string) {
	switch t := t.(type) {
	case *types.Alias:
		c.walk(types.Unalias(t), ident)
	case *types.Named:
		if args := t.TypeArgs(); args != nil {
			for i := range args.Len() {
				c.walk(args.At(i), ident)
			}
		}
		obj := t.Origin().Obj()
		path := pkgPath(obj)
		if !ours(path) {
			return // the standard library's and other modules' types
		}
		if path == c.sealed {
			c.report(ident, fmt.Sprintf("names %s.%s, a storage type", rel(path), obj.Name()))
			return
		}
		if internalPath(path) {
			if _, ok := c.aliased[obj]; !ok {
				c.report(ident, fmt.Sprintf("names %s.%s, a type of an internal package with no public alias", rel(path), obj.Name()))
				return
			}
			c.expand(t)
		}
		// A type of a public package is checked at its own declaration;
		// an unexported one is left alone, as Go's functional options
		// (HandlerOption is func(*handlerOptions)) use them on purpose.
	case *types.Pointer:
		c.walk(t.Elem(), ident)
	case *types.Slice:
		c.walk(t.Elem(), ident)
	case *types.Array:
		c.walk(t.Elem(), ident)
	case *types.Chan:
		c.walk(t.Elem(), ident)
	case *types.Map:
		c.walk(t.Key(), ident)
		c.walk(t.Elem(), ident)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tuple.Len() {
				c.walk(tuple.At(i).Type(), ident)
			}
		}
	case *types.Struct, *types.Interface:
		c.walkUnderlying(t, ident)
	case *types.TypeParam:
		c.walk(t.Constraint(), ident)
	case *types.Union:
		for i := range t.Len() {
			c.walk(t.Term(i).Type(), ident)
		}
	}
}

func (c *apiChecker) report(ident, what string) {
	f := ident + ": " + what
	if !c.reported[f] {
		c.reported[f] = true
		c.found = append(c.found, f)
	}
}

// The checker itself, on packages written for it: the findings it must
// make and the uses it must let pass.
func TestAPICheckerFindings(t *testing.T) {
	sources := []struct{ path, src string }{
		{module + "/internal/impl", `package impl
type Value struct{}
func (Value) Self() Value { return Value{} }
func (Value) Leak() Hidden { return Hidden{} }
type Hidden struct{}
type Opts struct{ N int }
`},
		{module + "/pub", `package pub
import "` + module + `/internal/impl"
type V = impl.Value
func Good() (V, error) { return V{}, nil }
func Bad() *impl.Hidden { return nil }
type S struct {
	X []impl.Hidden
	y impl.Hidden
	impl.Opts
}
type F func(map[string]impl.Hidden)
type I interface{ M() impl.Hidden }
type Option func(*options)
type options struct{ h impl.Hidden }
func With() Option { return nil }
var Var impl.Hidden
func Gen[T any](x T) <-chan impl.Hidden { return nil }
func (S) Method() [2]impl.Hidden { return [2]impl.Hidden{} }
`},
	}
	fset := token.NewFileSet()
	pkgs := map[string]*types.Package{}
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p, ok := pkgs[path]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("no package %s", path)
	})}
	for _, s := range sources {
		f, err := parser.ParseFile(fset, s.path+".go", s.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkg, err := conf.Check(s.path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[s.path] = pkg
	}
	pub := module + "/pub"
	c := checkerFor(map[string]*types.Package{pub: pkgs[pub]})
	c.checkPackage(pkgs[pub])
	const hidden = ": names internal/impl.Hidden, a type of an internal package with no public alias"
	want := []string{
		"pub.Bad" + hidden, "pub.F" + hidden, "pub.Gen" + hidden, "pub.I.M" + hidden,
		"pub.S.Method" + hidden, "pub.S.X" + hidden, "pub.V.Leak" + hidden, "pub.Var" + hidden,
	}
	got := slices.Sorted(slices.Values(c.found))
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
