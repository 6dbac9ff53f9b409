package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqlStart matches a string literal that begins a SQL statement as this
// repository writes them (upper-case keywords), also when the literal is the
// first piece of a concatenation ("SELECT … FROM `" + table + "`"). Keywords
// alone do not match: "DELETE /api/…" is an HTTP route, "UPDATE" a word.
var sqlStart = regexp.MustCompile("^\\s*(" +
	`SELECT\s|` +
	`INSERT\s+(IGNORE\s+)?INTO\s|REPLACE\s+INTO\s|` +
	"UPDATE\\s+(`|\\S+\\s+SET\\s)|" +
	`DELETE\s+(\S+\s+)?FROM\s|` +
	`CREATE\s+(TABLE|DATABASE|INDEX|UNIQUE|TEMPORARY|OR\s+REPLACE)\s|` +
	`ALTER\s+TABLE\s|` +
	`DROP\s+(TABLE|DATABASE|INDEX)\s|` +
	`TRUNCATE\s)`)

// sqlAllowed are the packages besides sql/ that may hold SQL text, and why.
// Test files (_test.go) may too: they build fixture rows and read rows back
// to assert them, and those statements are the tests', not the daemon's
// behaviour a reader looks up in sql/.
var sqlAllowed = map[string]string{
	// It creates and drops each test's database; sql's own tests use it, so
	// it cannot take its statements from sql without an import cycle. Only
	// tests link it (checked below).
	"internal/testdb": "per-test databases",
}

// Every statement the daemon runs is a named query in sql/ (queries*.sql,
// its name in queries*.go): one place to read and review what reaches the
// database. A string literal starting a SQL statement in a non-test file
// outside sql/ fails the test.
func TestSQLTextOnlyInSQL(t *testing.T) {
	pkgs := goList(t, "./...")
	fset := token.NewFileSet()
	for _, p := range pkgs {
		dir := rel(p.ImportPath)
		if under("sql")(dir) {
			continue
		}
		if _, ok := sqlAllowed[dir]; ok {
			continue
		}
		for _, name := range slices.Concat(p.GoFiles, p.IgnoredGoFiles) {
			if strings.HasSuffix(name, "_test.go") {
				continue // a test file left out by its build tags (internal/chaos's galera rounds)
			}
			file := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && sqlStart.MatchString(s) {
					pos := fset.Position(lit.Pos())
					rp, _ := filepath.Rel(moduleDir(t), pos.Filename)
					t.Errorf("%s:%d: SQL text outside sql/ (make it a named query in sql/queries*.sql): %.60q", rp, pos.Line, s)
				}
				return true
			})
		}
	}
	// The allowed packages stay test support: nothing the binary or a
	// user's program links depends on them.
	for _, p := range pkgs {
		if internalPath(p.ImportPath) {
			continue
		}
		for _, d := range p.Deps {
			if reason, ok := sqlAllowed[rel(d)]; ok && ours(d) {
				t.Errorf("%s depends on %s, which may hold SQL text only as test support (%s)", rel(p.ImportPath), rel(d), reason)
			}
		}
	}
}

// The detector itself: statements match, the look-alikes this repository
// has (HTTP routes, words in messages) do not.
func TestSQLStartDetector(t *testing.T) {
	for _, s := range []string{
		"SELECT COUNT(*) FROM `", "\n\tSELECT id FROM t", "INSERT IGNORE INTO `", "INSERT INTO x (a) VALUES (?)",
		"UPDATE `", "UPDATE wp_jobs SET status = ?", "DELETE FROM t", "CREATE TABLE IF NOT EXISTS `",
		"CREATE DATABASE IF NOT EXISTS `", "DROP DATABASE IF EXISTS `", "ALTER TABLE t ADD x", "REPLACE INTO t",
		"TRUNCATE river_job",
	} {
		if !sqlStart.MatchString(s) {
			t.Errorf("%q is not detected", s)
		}
	}
	for _, s := range []string{
		"DELETE /api/worker/sessions/{sessionId}", "UPDATE", "select the queue", "Select a worker",
		"CREATE", "drop table", "a SELECT inside",
	} {
		if sqlStart.MatchString(s) {
			t.Errorf("%q is detected", s)
		}
	}
}
