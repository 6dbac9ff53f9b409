package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// queryConstants parses queries*.go and returns their q* string constants.
func queryConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("queries*.go")
	require.NoError(t, err)
	out := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		addQueryConstants(t, f, out)
	}
	require.NotEmpty(t, out)
	return out
}

func addQueryConstants(t *testing.T, f *ast.File, out map[string]string) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "q") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok && lit.Kind == token.STRING, "%s is not a string literal", n.Name)
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				out[n.Name] = v
			}
		}
	}
}

// sqlNames lists the "-- name:" headers of queries*.sql, read independently
// of parseBlocks.
func sqlNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("queries*.sql")
	require.NoError(t, err)
	var names []string
	for _, file := range files {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?m)^--\s*name:\s*(\S+)\s*$`).FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
	}
	require.NotEmpty(t, names)
	return names
}

func TestQueryCatalogue(t *testing.T) {
	t.Parallel()
	consts := queryConstants(t)
	names := sqlNames(t)

	seen := map[string]bool{}
	for _, n := range names {
		require.False(t, seen[n], "query %q defined twice in queries*.sql", n)
		seen[n] = true
	}
	byValue := map[string]string{}
	for c, v := range consts {
		require.True(t, seen[v], "constant %s = %q has no -- name: block in queries*.sql", c, v)
		other, dup := byValue[v]
		require.False(t, dup, "constants %s and %s name the same query", c, other)
		byValue[v] = c
	}
	for _, n := range names {
		_, ok := byValue[n]
		require.True(t, ok, "queries*.sql block %q is not referenced by any q* constant", n)
	}

	// parseBlocks agrees with the plain header scan.
	files, err := filepath.Glob("queries*.sql")
	require.NoError(t, err)
	var parsed []string
	for _, file := range files {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		blocks, err := parseBlocks(string(src), "name")
		require.NoError(t, err)
		for _, b := range blocks {
			parsed = append(parsed, b.name)
			require.NotContains(t, b.sql, "-- ", "comment lines are dropped from %s", b.name)
		}
	}
	require.Equal(t, names, parsed)
}

var placeholder = regexp.MustCompile(`\{[^}]*\}`)

func TestRenderedQueriesHaveNoPlaceholders(t *testing.T) {
	t.Parallel()
	for _, n := range []Naming{
		{DBPrefix: "wp_"},
		{DBPrefix: "wp_2_", QueuetyPrefix: strp("")},
		{DBPrefix: "x_", Overrides: map[string]string{"jobs": "j", "logs": "l", "queue_states": "qs", "workflows": "wf"}},
	} {
		tables := mustResolve(t, n)
		q, err := loadQueries(tables, "")
		require.NoError(t, err)
		require.Len(t, q, len(queryConstants(t)))
		for name, sql := range q {
			require.Empty(t, placeholder.FindAllString(sql, -1), "query %s: %s", name, sql)
			require.NotEmpty(t, strings.TrimSpace(sql), name)
			require.False(t, strings.HasSuffix(sql, ";"), name)
		}
		for _, src := range []struct {
			name  string
			text  string
			kinds []string
		}{
			{"schema/queuety.sql", schemaSQL, []string{"table"}},
			{"schema/extensions.sql", extensionsSQL, []string{"column", "index"}},
		} {
			blocks, err := parseBlocks(src.text, src.kinds...)
			require.NoError(t, err)
			require.NotEmpty(t, blocks)
			for _, b := range blocks {
				sql := render(b.sql, tables)
				require.Empty(t, placeholder.FindAllString(sql, -1), "%s %s", src.name, b.name)
			}
		}
		// The names land backquoted.
		require.Contains(t, q[qGetJob], "`"+tables["jobs"]+"`")
		require.Contains(t, q[qJobLogs], "`"+tables["logs"]+"`")
	}
}

// TestQueriesPrepare has the server parse every complete named statement
// (those the store does not extend with VALUES tuples or id ranges).
func TestQueriesPrepare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The scratch marker table exists once a tool has marked the database.
	require.NoError(t, e.s.MarkScratch(e.ctx, "prepare"))
	all, err := loadQueries(e.tables, "")
	require.NoError(t, err)
	for name, sql := range all {
		// A scratch statement's name is given at the call; any existing
		// table's parses.
		sql = withName(sql, e.tables["jobs"])
		if strings.HasPrefix(name, "claim-which-") || name == qStuckReason || name == qOrphanForEachPlansWhere {
			continue // fragments of claim-jobs (prepared with it below), of the stuck-* queries and of the orphan cursors
		}
		if name == qClaimJobs || name == qSessionCandidates {
			for _, which := range []string{qClaimWhichPlain, qClaimWhichHandlers, qClaimWhichSteps, qClaimWhichAllSteps} {
				full := strings.Replace(sql, "/*which*/", strings.ReplaceAll(all[which], "IN (?)", "IN (?, ?)"), 1)
				st, err := e.db.PrepareContext(e.ctx, full)
				require.NoError(t, err, "%s with %s does not parse:\n%s", name, which, full)
				require.NoError(t, st.Close())
			}
			full := strings.Replace(sql, "/*which*/", all[qClaimWhichPlain]+" AND "+all[qClaimSkipGroups]+" AND "+all[qClaimSkipHandlers]+" AND "+all[qClaimSkipIDs], 1)
			st, err := e.db.PrepareContext(e.ctx, full)
			require.NoError(t, err, "%s with %s does not parse:\n%s", name, qClaimSkipGroups, full)
			require.NoError(t, st.Close())
			continue
		}
		if strings.HasPrefix(name, "retention-") && strings.HasSuffix(name, "-where") || strings.Contains(sql, "/*where*/") {
			continue // the retention kinds' fragments and queries, prepared together below
		}
		if strings.HasSuffix(strings.TrimSpace(sql), "VALUES") || strings.Contains(sql, "/*ids*/") || strings.Contains(sql, "/*steps*/") || strings.Contains(sql, "/*fence*/") {
			require.True(t, slices.Contains([]string{qInsertLogs, qInsertLogsNarrow, qInsertJobsBulk, qClaimRunning, qCompleteHeldJobs, qAdvanceWorkflows, qCompleteWorkflowJobs, qClaimedStepJobs}, name),
				"%s is completed by the store; add it to this list", name)
			continue
		}
		st, err := e.db.PrepareContext(e.ctx, sql)
		require.NoError(t, err, "query %s does not parse:\n%s", name, sql)
		require.NoError(t, st.Close())
	}
	for _, k := range RetentionKinds {
		count, sel, del, err := e.s.retentionQueries(k)
		require.NoError(t, err)
		for _, q := range []string{count, sel, strings.Replace(del, "IN (?)", "IN (?, ?)", 1)} {
			if q == "" {
				continue
			}
			st, err := e.db.PrepareContext(e.ctx, q)
			require.NoError(t, err, "retention %s does not parse:\n%s", k, q)
			require.NoError(t, st.Close())
		}
	}
}

func TestParseBlocksErrors(t *testing.T) {
	t.Parallel()
	_, err := parseBlocks("-- name: a\n-- only a comment\n-- name: b\nSELECT 1\n", "name")
	require.ErrorContains(t, err, `empty name block "a"`)
	_, err = parseBlocks("-- name:\nSELECT 1\n", "name")
	require.ErrorContains(t, err, "empty name block")
	b, err := parseBlocks("preamble\n-- name: a\nSELECT 1;\n\n-- name: b\n  -- comment\nSELECT\n  2\n", "name")
	require.NoError(t, err)
	require.Equal(t, []block{{kind: "name", name: "a", sql: "SELECT 1"}, {kind: "name", name: "b", sql: "SELECT\n  2"}}, b)
}
