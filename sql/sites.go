package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

//go:embed sites.sql
var sitesSQL string

// Names of sites.sql's statements.
const (
	qAnyDueSite    = "any-due-site"
	qNetworkBlogs  = "network-blogs"
	qTablesPresent = "tables-present"
	qQuestions     = "server-questions"
)

// sitesQueries is sites.sql parsed once; its {jobs} placeholder is
// rendered per site.
var sitesQueries = func() map[string]string {
	blocks, err := parseBlocks(sitesSQL, "name")
	if err != nil {
		panic("sites.sql: " + err.Error())
	}
	m := make(map[string]string, len(blocks))
	for _, b := range blocks {
		m[b.name] = b.sql
	}
	return m
}()

// DueLook is one site's part of a batched idle look: its Store, the
// queues it serves, and its database when the look runs on a connection
// to another database of the server (then the jobs table is named with it).
type DueLook struct {
	Store    *Store
	Queues   []string
	Database string
}

// AnyDueAcross answers AnyDue for many sites whose stores share one
// database handle, in one statement (UNION ALL of each site's any-due):
// due[i] tells whether looks[i] has a pending, due job. Sites without
// queues are not asked.
func AnyDueAcross(ctx context.Context, db *sqlx.DB, looks []DueLook) ([]bool, error) {
	due := make([]bool, len(looks))
	var parts []string
	var args []any
	for i, l := range looks {
		if len(l.Queues) == 0 {
			continue
		}
		jobs := "`" + l.Store.tables["jobs"] + "`"
		if l.Database != "" {
			if err := validDatabaseName(l.Database); err != nil {
				return nil, err
			}
			jobs = "`" + l.Database + "`." + jobs
		}
		part, a, err := sqlx.In(strings.ReplaceAll(sitesQueries[qAnyDueSite], "{jobs}", jobs), i, l.Queues)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", qAnyDueSite, err)
		}
		parts = append(parts, part)
		args = append(args, a...)
	}
	if len(parts) == 0 {
		return due, nil
	}
	rows, err := db.QueryContext(ctx, db.Rebind(strings.Join(parts, "\nUNION ALL\n")), args...)
	if err != nil {
		return nil, fmt.Errorf("%s (%d sites): %w", qAnyDueSite, len(parts), err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		if i >= 0 && i < len(due) {
			due[i] = true
		}
	}
	return due, rows.Err()
}

// validDatabaseName keeps a database name to what can be backquoted.
func validDatabaseName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "`\x00") {
		return fmt.Errorf("database name %q: cannot be quoted", name)
	}
	return nil
}

// Blog is a wp_blogs row WordPress serves.
type Blog struct {
	ID     int64  `db:"blog_id"`
	SiteID int64  `db:"site_id"`
	Domain string `db:"domain"`
	Path   string `db:"path"`
}

// NetworkBlogs lists the served subsites of the multisite network whose
// base table prefix is base (wp-config's $table_prefix): <base>blogs rows
// neither archived, deleted nor spam.
func NetworkBlogs(ctx context.Context, db *sqlx.DB, base string) ([]Blog, error) {
	if err := validTableName(base + "blogs"); err != nil {
		return nil, err
	}
	q := strings.Replace(sitesQueries[qNetworkBlogs], "/*blogs*/", "`"+base+"blogs`", 1)
	var out []Blog
	if err := db.SelectContext(ctx, &out, q); err != nil {
		return nil, fmt.Errorf("%s: %w", qNetworkBlogs, err)
	}
	return out, nil
}

// TablesPresent reports which of names exist in db's database.
func TablesPresent(ctx context.Context, db *sqlx.DB, names []string) (map[string]bool, error) {
	have := map[string]bool{}
	if len(names) == 0 {
		return have, nil
	}
	q, args, err := sqlx.In(sitesQueries[qTablesPresent], names)
	if err != nil {
		return nil, err
	}
	var found []string
	if err := db.SelectContext(ctx, &found, db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("%s: %w", qTablesPresent, err)
	}
	for _, n := range found {
		have[n] = true
	}
	return have, nil
}

// ErrNoSites is returned by a discovery that found nothing to serve.
var ErrNoSites = errors.New("no sites to serve")

// ServerOf splits a DSN into the server it names (the DSN without its
// database, used as a key and to connect for looks that name every table
// with its database) and its database name.
func ServerOf(dsn string) (server, database string, err error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return "", "", err
	}
	database = cfg.DBName
	cfg.DBName = ""
	return cfg.FormatDSN(), database, nil
}

// ServerQuestions is the server's Questions counter: the statements every
// client has sent it since it started, this one included.
func ServerQuestions(ctx context.Context, db *sqlx.DB) (int64, error) {
	var row struct {
		Name  string `db:"Variable_name"`
		Value int64  `db:"Value"`
	}
	if err := db.GetContext(ctx, &row, sitesQueries[qQuestions]); err != nil {
		return 0, fmt.Errorf("%s: %w", qQuestions, err)
	}
	return row.Value, nil
}
