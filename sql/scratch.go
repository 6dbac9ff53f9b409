package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// MarkerTable records which tool may treat which jobs table (and the tables
// named with it) as its own scratch space: `queuety bench` empties tables,
// `queuety dev` fills them with demo jobs, and neither may do so in a
// database holding someone else's rows. It lives beside the tables,
// unprefixed, and PHP never reads it.
const MarkerTable = "queuety_go_markers"

// withName puts a table or database name into a queries_scratch.sql
// statement's /*name*/.
func withName(q, name string) string { return strings.Replace(q, "/*name*/", quoteIdent(name), 1) }

// quoteIdent backquotes a table or database name.
func quoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// ScratchMarked reports whether tool marked this Store's jobs table as its
// scratch space; a database without the marker table has no marks.
func (s *Store) ScratchMarked(ctx context.Context, tool string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.query(qScratchMarkerCount), tool, s.tables["jobs"])
	switch {
	case err == nil:
		return n > 0, nil
	case missingTable(err):
		return false, nil
	}
	return false, err
}

// MarkScratch records that tool may use this Store's tables from now on.
func (s *Store) MarkScratch(ctx context.Context, tool string) error {
	if _, err := s.db.ExecContext(ctx, s.query(qScratchCreate)); err != nil {
		return fmt.Errorf("creating %s: %w", MarkerTable, err)
	}
	_, err := s.db.ExecContext(ctx, s.query(qScratchMark), tool, s.tables["jobs"])
	return err
}

// BaseTables lists the database's tables (not views), sorted.
func (s *Store) BaseTables(ctx context.Context) ([]string, error) {
	var tables []string
	err := s.db.SelectContext(ctx, &tables, s.query(qScratchBaseTables))
	return tables, err
}

// TableHasRows reports whether table holds at least one row.
func (s *Store) TableHasRows(ctx context.Context, table string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, withName(s.query(qScratchTableHasRows), table))
	return n > 0, err
}

// CreateDatabase creates database name on db's server when it is missing,
// with the utf8mb4 defaults the tables want. db is a connection without a
// database (there is no Store before the database exists).
func CreateDatabase(ctx context.Context, db sqlx.ExecerContext, name string) error {
	return execServer(ctx, db, qCreateDatabase, name)
}

// DropDatabase drops database name when it exists.
func DropDatabase(ctx context.Context, db sqlx.ExecerContext, name string) error {
	return execServer(ctx, db, qDropDatabase, name)
}

// serverQueries are the named queries read without a Store (no table
// names): only the server statements above use them.
var serverQueries = sync.OnceValues(func() (map[string]string, error) { return loadQueries(Tables{}, "") })

func execServer(ctx context.Context, db sqlx.ExecerContext, name, database string) error {
	q, err := serverQueries()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, withName(q[name], database))
	return err
}

// missingTable reports MariaDB's "table doesn't exist" (1146).
func missingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}
