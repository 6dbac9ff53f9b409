// Command housestats prints the figures the architecture reviews quote, so
// anyone can take them again at any commit with the project's own tools:
//
//	go run ./scripts/housestats            # every figure
//	go run ./scripts/housestats -uses workflow
//
// For each package (non-test files): files, lines and exported names
// (types, funcs, methods on exported types, consts and vars); the largest
// types by fields and methods; the functions with the highest cyclomatic
// number (1 + if, for, range, case, comm clause, && and ||, as gocyclo
// counts); the calls of context.Background() outside main packages; and,
// with -uses PKG, which packages use each exported name of PKG.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

type listed struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Export     string
	Module     *struct{ Path string }
}

type pkg struct {
	listed
	files []*ast.File
	lines int
}

func main() {
	uses := flag.String("uses", "workflow", "report, for each exported name of this package (path relative to the module), the packages that use it; empty skips")
	top := flag.Int("top", 15, "how many functions and types to list")
	flag.Parse()
	if err := run(*uses, *top); err != nil {
		fmt.Fprintln(os.Stderr, "housestats:", err)
		os.Exit(1)
	}
}

func run(usesOf string, top int) error {
	all, err := goList("-export", "-deps", "./...")
	if err != nil {
		return err
	}
	module, root, err := moduleInfo()
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	exports := map[string]string{}
	var ours []*pkg
	for _, l := range all {
		exports[l.ImportPath] = l.Export
		if l.Module == nil || l.Module.Path != module || strings.Contains(l.ImportPath, "/scripts/") {
			continue
		}
		p := &pkg{listed: l}
		for _, f := range l.GoFiles {
			path := filepath.Join(l.Dir, f)
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			p.lines += bytes.Count(src, []byte("\n"))
			af, err := parser.ParseFile(fset, path, src, parser.ParseComments)
			if err != nil {
				return err
			}
			p.files = append(p.files, af)
		}
		ours = append(ours, p)
	}
	sort.Slice(ours, func(i, j int) bool { return ours[i].ImportPath < ours[j].ImportPath })
	rel := func(path string) string {
		if path == module {
			return "."
		}
		return strings.TrimPrefix(path, module+"/")
	}

	fmt.Println("## Packages (non-test .go files)")
	fmt.Println("| package | files | lines | exported: types / funcs / methods / values = total |")
	fmt.Println("|---|---|---|---|")
	var tf, tl, tn int
	for _, p := range ours {
		t, f, m, v := exportedCounts(p.files)
		fmt.Printf("| %s | %d | %d | %d / %d / %d / %d = %d |\n", rel(p.ImportPath), len(p.files), p.lines, t, f, m, v, t+f+m+v)
		tf += len(p.files)
		tl += p.lines
		tn += t + f + m + v
	}
	fmt.Printf("| **all** | %d | %d | %d |\n\n", tf, tl, tn)

	fmt.Println("## Largest struct types (fields, methods)")
	type typeSize struct {
		name            string
		fields, methods int
		files           map[string]bool
	}
	var sizes []*typeSize
	for _, p := range ours {
		byName := map[string]*typeSize{}
		get := func(n string) *typeSize {
			if byName[n] == nil {
				byName[n] = &typeSize{name: rel(p.ImportPath) + "." + n, files: map[string]bool{}}
			}
			return byName[n]
		}
		for _, f := range p.files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							if st, ok := ts.Type.(*ast.StructType); ok {
								n := 0
								for _, fl := range st.Fields.List {
									n += max(1, len(fl.Names))
								}
								get(ts.Name.Name).fields = n
							}
						}
					}
				case *ast.FuncDecl:
					if d.Recv != nil {
						ts := get(recvName(d))
						ts.methods++
						ts.files[fset.Position(d.Pos()).Filename] = true
					}
				}
			}
		}
		for _, s := range byName {
			sizes = append(sizes, s)
		}
	}
	sort.Slice(sizes, func(i, j int) bool {
		a, b := sizes[i], sizes[j]
		if a.fields+a.methods != b.fields+b.methods {
			return a.fields+a.methods > b.fields+b.methods
		}
		return a.name < b.name
	})
	fmt.Println("| type | fields | methods | files with its methods |")
	fmt.Println("|---|---|---|---|")
	for i, s := range sizes {
		if i == top {
			break
		}
		fmt.Printf("| %s | %d | %d | %d |\n", s.name, s.fields, s.methods, len(s.files))
	}
	fmt.Println()

	fmt.Println("## Cyclomatic numbers (non-test)")
	type fnCyclo struct {
		name string
		n    int
	}
	var fns []fnCyclo
	sum := 0
	for _, p := range ours {
		for _, f := range p.files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				name := fd.Name.Name
				if fd.Recv != nil {
					name = recvName(fd) + "." + name
				}
				pos := fset.Position(fd.Pos())
				n := cyclo(fd)
				sum += n
				fns = append(fns, fnCyclo{fmt.Sprintf("%s %s (%s:%d)", rel(p.ImportPath), name, filepath.Base(pos.Filename), pos.Line), n})
			}
		}
	}
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].n > fns[j].n })
	over := 0
	for _, f := range fns {
		if f.n > 20 {
			over++
		}
	}
	fmt.Printf("functions: %d, average %.2f, over 20: %d (%.2f per 1k lines)\n\n", len(fns), float64(sum)/float64(len(fns)), over, float64(over)*1000/float64(tl))
	for i, f := range fns {
		if i == top {
			break
		}
		fmt.Printf("- %d %s\n", f.n, f.name)
	}
	fmt.Println()

	fmt.Println("## context.Background() outside main packages (non-test)")
	bg := 0
	for _, p := range ours {
		if p.Name == "main" {
			continue
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Background" {
						if id, ok := s.X.(*ast.Ident); ok && id.Name == "context" {
							bg++
							pos := fset.Position(c.Pos())
							fmt.Printf("- %s:%d\n", strings.TrimPrefix(pos.Filename, root+"/"), pos.Line)
						}
					}
				}
				return true
			})
		}
	}
	fmt.Printf("total: %d\n\n", bg)

	if usesOf == "" {
		return nil
	}
	return reportUses(fset, ours, exports, module+"/"+usesOf, rel)
}

// reportUses type-checks every package of the module from source (its
// imports from the compiler's export data) and counts, for each exported
// name of target, the other packages that use it.
func reportUses(fset *token.FileSet, ours []*pkg, exports map[string]string, target string, rel func(string) string) error {
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	users := map[string]map[string]bool{} // name key → using packages
	var names []string
	for _, p := range ours {
		if p.ImportPath == target {
			for _, f := range p.files {
				names = append(names, exportedKeys(f)...)
			}
		}
	}
	for _, p := range ours {
		if p.ImportPath == target {
			continue
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		if _, err := conf.Check(p.ImportPath, fset, p.files, info); err != nil {
			return fmt.Errorf("type-check %s: %w", p.ImportPath, err)
		}
		for _, obj := range info.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != target || !obj.Exported() {
				continue
			}
			k := objKey(obj)
			if users[k] == nil {
				users[k] = map[string]bool{}
			}
			users[k][rel(p.ImportPath)] = true
		}
	}
	byUsers := map[string]int{}
	for _, n := range names {
		var us []string
		for u := range users[n] {
			us = append(us, u)
		}
		sort.Strings(us)
		key := strings.Join(us, " + ")
		if key == "" {
			key = "(no other package)"
		}
		byUsers[key]++
	}
	var keys []string
	for k := range byUsers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return byUsers[keys[i]] > byUsers[keys[j]] })
	fmt.Printf("## Exported names of %s (%d), by the packages that use them (non-test code)\n", rel(target), len(names))
	for _, k := range keys {
		fmt.Printf("- %d: %s\n", byUsers[k], k)
	}
	return nil
}

// exportedCounts counts what a package exports, the way the reviews count.
func exportedCounts(files []*ast.File) (typ, fn, meth, val int) {
	for _, f := range files {
		for _, k := range exportedKeys(f) {
			switch k[:2] {
			case "T ":
				typ++
			case "F ":
				fn++
			case "M ":
				meth++
			default:
				val++
			}
		}
	}
	return
}

// exportedKeys names each exported declaration of f with a kind prefix:
// "T Name", "F Name", "M Recv.Name", "V Name".
func exportedKeys(f *ast.File) []string {
	var keys []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				keys = append(keys, "F "+d.Name.Name)
			} else if r := recvName(d); ast.IsExported(r) {
				keys = append(keys, "M "+r+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						keys = append(keys, "T "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							keys = append(keys, "V "+n.Name)
						}
					}
				}
			}
		}
	}
	return keys
}

// objKey names obj as exportedKeys does.
func objKey(obj types.Object) string {
	switch o := obj.(type) {
	case *types.TypeName:
		return "T " + o.Name()
	case *types.Func:
		if recv := o.Type().(*types.Signature).Recv(); recv != nil {
			t := recv.Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if n, ok := t.(*types.Named); ok {
				return "M " + n.Obj().Name() + "." + o.Name()
			}
			return "M ?." + o.Name()
		}
		return "F " + o.Name()
	}
	return "V " + obj.Name()
}

func recvName(d *ast.FuncDecl) string {
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

// cyclo is gocyclo's number: 1 + each if, for, range, non-default case,
// select clause, && and ||, in the function and its closures.
func cyclo(fd *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fd.Body, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// moduleInfo is the main module's path and directory.
func moduleInfo() (path, dir string, err error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m: %w", err)
	}
	path, dir, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	return path, dir, nil
}

func goList(args ...string) ([]listed, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}
