package store

import (
	"context"
	"fmt"
	"strings"
)

// MigrateReport says what Migrate created or added; empty when the database
// was already up to date.
type MigrateReport struct {
	CreatedTables []string `json:"created_tables"`
	AddedColumns  []string `json:"added_columns"`
	AddedIndexes  []string `json:"added_indexes"`
}

// Changed reports whether Migrate changed anything.
func (r MigrateReport) Changed() bool {
	return len(r.CreatedTables)+len(r.AddedColumns)+len(r.AddedIndexes) > 0
}

// Migrate creates the Queuety tables that are missing with the plugin's own
// DDL, then adds our extensions that are missing. It never alters or drops
// anything it finds, so it is safe on a database the plugin installed, and
// running it twice changes nothing the second time.
func (s *Store) Migrate(ctx context.Context) (MigrateReport, error) {
	var rep MigrateReport
	tables, err := parseBlocks(schemaSQL, "table")
	if err != nil {
		return rep, err
	}
	for _, b := range tables {
		name := s.tables[b.name]
		exists, err := s.tableExists(ctx, name)
		if err != nil {
			return rep, err
		}
		if exists {
			continue
		}
		if _, err := s.db.ExecContext(ctx, render(b.sql, s.tables)); err != nil {
			return rep, fmt.Errorf("create table %s: %w", name, err)
		}
		rep.CreatedTables = append(rep.CreatedTables, name)
	}
	exts, err := parseBlocks(extensionsSQL, "column", "index")
	if err != nil {
		return rep, err
	}
	for _, b := range exts {
		suffix, obj, ok := strings.Cut(b.name, ".")
		if !ok {
			return rep, fmt.Errorf("extensions.sql: %s %q is not <table>.<name>", b.kind, b.name)
		}
		table := s.tables[suffix]
		check := qColumnExists
		if b.kind == "index" {
			check = qIndexExists
		}
		var n int
		if err := s.db.GetContext(ctx, &n, s.query(check), table, obj); err != nil {
			return rep, fmt.Errorf("check %s %s.%s: %w", b.kind, table, obj, err)
		}
		if n > 0 {
			continue
		}
		if _, err := s.db.ExecContext(ctx, render(b.sql, s.tables)); err != nil {
			return rep, fmt.Errorf("add %s %s.%s: %w", b.kind, table, obj, err)
		}
		if b.kind == "index" {
			rep.AddedIndexes = append(rep.AddedIndexes, table+"."+obj)
		} else {
			rep.AddedColumns = append(rep.AddedColumns, table+"."+obj)
		}
	}
	return rep, nil
}

func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n,
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name)
	return n > 0, err
}

// CheckSchema returns an error saying what to run when the tables or our
// extensions are missing, so `work` fails fast instead of mid-claim.
func (s *Store) CheckSchema(ctx context.Context) error {
	for _, suffix := range []string{"jobs", "logs", "queue_states", "workflows"} {
		ok, err := s.tableExists(ctx, s.tables[suffix])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("table %s does not exist: run `queuety migrate` (or check --prefix / QUEUETY_TABLE_PREFIX)", s.tables[suffix])
		}
	}
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(qColumnExists), s.tables["jobs"], "reserved_by"); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("table %s lacks queuety-go's extensions: run `queuety migrate` (it only adds, never changes the plugin's columns)", s.tables["jobs"])
	}
	return nil
}
