package store

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

// queryFiles holds one queries_<topic>.sql per area (the claim, workflows,
// waits, …), each with its constants in queries_<topic>.go. In every file,
// {jobs}, {logs}, {queue_states}, {workflows}, … are replaced by the
// resolved, backquoted table names when the Store is built (with their
// database for a Store on a server's shared pool: renderIn), {database} by
// the database the Store serves, and "(?)" after
// IN is expanded by sqlx.In. Keep statements short: the claim and the
// completion run tens of thousands of times a second.
//
//go:embed queries*.sql
var queryFiles embed.FS

//go:embed schema/queuety.sql
var schemaSQL string

//go:embed schema/queuety_go.sql
var ownSchemaSQL string

//go:embed schema/extensions.sql
var extensionsSQL string

// block is one commented SQL statement of an embedded file.
type block struct {
	kind, name, sql string
}

// parseBlocks splits an embedded SQL file on "-- <kind>: <name>" header
// lines. Comment lines inside a block are dropped; the SQL is kept as written.
func parseBlocks(src string, kinds ...string) ([]block, error) {
	var out []block
	var cur *block
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.sql = strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
			out = append(out, *cur)
		}
		body.Reset()
	}
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			header := strings.TrimSpace(strings.TrimPrefix(trimmed, "--"))
			for _, k := range kinds {
				if name, ok := strings.CutPrefix(header, k+":"); ok {
					flush()
					cur = &block{kind: k, name: strings.TrimSpace(name)}
				}
			}
			continue
		}
		if cur != nil {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	for _, b := range out {
		if b.name == "" || b.sql == "" {
			return nil, fmt.Errorf("embedded SQL: empty %s block %q", b.kind, b.name)
		}
	}
	return out, nil
}

// render replaces {suffix} placeholders with backquoted table names, as a
// Store on its own database's connections names them.
func render(sql string, t Tables) string { return renderIn(sql, t, "") }

// renderIn renders a statement for the tables t of database; the caller
// checks the name (validDatabaseName, qualifiable). With no database,
// tables are named alone and {database} is DATABASE(): the connection's
// database, as a single site's Store has always sent them. With one, every
// table is named `database`.`table` and {database} is the name as a
// string, so the statement means the same on a connection to any database
// of the server (a batched statement of many sites, a pool the sites of a
// server share). {db.} is that qualifier alone, for a table named in the
// statement itself.
func renderIn(sql string, t Tables, database string) string {
	qualifier, current := "", "DATABASE()"
	if database != "" {
		qualifier = "`" + database + "`."
		current = "'" + strings.ReplaceAll(database, "'", "''") + "'"
	}
	for _, s := range allSuffixes() {
		sql = strings.ReplaceAll(sql, "{"+s+"}", qualifier+"`"+t[s]+"`")
	}
	return strings.NewReplacer("{database}", current, "{db.}", qualifier).Replace(sql)
}

// qualifiable keeps a database name to what renderIn can write both as an
// identifier and as a string in any sql_mode: a backslash is an escape
// character unless NO_BACKSLASH_ESCAPES is set, so it cannot be written
// the same way for both.
func qualifiable(database string) error {
	if err := validDatabaseName(database); err != nil {
		return err
	}
	if strings.Contains(database, `\`) {
		return fmt.Errorf("database name %q: a backslash cannot be named on a pool shared across databases", database)
	}
	return nil
}

// catalogue is queries_*.sql parsed once, unrendered: each Store renders it
// for its tables, and a batched look renders one query for one site in its
// database (Store.queryIn).
var catalogue = sync.OnceValues(func() (map[string]string, error) {
	files, err := fs.Glob(queryFiles, "queries*.sql")
	if err != nil {
		return nil, err
	}
	q := map[string]string{}
	for _, name := range files {
		src, err := queryFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		blocks, err := parseBlocks(string(src), "name")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, b := range blocks {
			if _, dup := q[b.name]; dup {
				return nil, fmt.Errorf("%s: query %q defined twice", name, b.name)
			}
			q[b.name] = b.sql
		}
	}
	return q, nil
})

// loadQueries renders the catalogue for the given tables, of database
// when it is not "" (renderIn).
func loadQueries(t Tables, database string) (map[string]string, error) {
	raw, err := catalogue()
	if err != nil {
		return nil, err
	}
	q := make(map[string]string, len(raw))
	for name, sql := range raw {
		q[name] = renderQuery(sql, raw, t, database)
	}
	return q, nil
}

// queries are a Store's named queries, each rendered for its tables on
// first use. Rendering all of them up front cost every Store about 160 KiB
// of SQL text, most of it never run: with many sites a Store each, that
// was a quarter of an idle site's memory.
type queries struct {
	tables   Tables
	database string            // "" for a Store of New (renderIn)
	raw      map[string]string // the catalogue
	rendered sync.Map          // name → string
}

func newQueries(t Tables, database string) (*queries, error) {
	raw, err := catalogue()
	if err != nil {
		return nil, err
	}
	return &queries{tables: t, database: database, raw: raw}, nil
}

// get returns the named query rendered; ok is false for an unknown name.
func (q *queries) get(name string) (sql string, ok bool) {
	if v, ok := q.rendered.Load(name); ok {
		return v.(string), true
	}
	src, ok := q.raw[name]
	if !ok {
		return "", false
	}
	v, _ := q.rendered.LoadOrStore(name, renderQuery(src, q.raw, q.tables, q.database))
	return v.(string), true
}

// renderQuery renders one query of the catalogue raw for t in database.
// A few conditions are written once and spliced where they are named: the
// stuck reason into the queries that classify jobs (queries_stuck.sql),
// the orphan for_each cursors into the stale sweep's delete and its look.
func renderQuery(sql string, raw map[string]string, t Tables, database string) string {
	sql = strings.ReplaceAll(sql, "/*reason*/", raw[qStuckReason])
	sql = strings.ReplaceAll(sql, "/*orphan*/", raw[qOrphanForEachPlansWhere])
	return renderIn(sql, t, database)
}

// queryIn is the named query for this store's tables, each named with
// database; "" is query(name) (a Store of NewIn names its own database
// there already).
func (s *Store) queryIn(name, database string) (string, error) {
	if database == "" {
		return s.query(name), nil
	}
	if err := validDatabaseName(database); err != nil {
		return "", err
	}
	raw, err := catalogue()
	if err != nil {
		return "", err
	}
	sql, ok := raw[name]
	if !ok {
		panic("store: unknown query " + name) // a typo in a constant; caught by tests
	}
	return renderQuery(sql, raw, s.tables, database), nil
}
