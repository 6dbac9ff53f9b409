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

// NonNil returns the report with empty lists instead of nil ones, for JSON.
func (r MigrateReport) NonNil() MigrateReport {
	for _, l := range []*[]string{&r.CreatedTables, &r.AddedColumns, &r.AddedIndexes} {
		if *l == nil {
			*l = []string{}
		}
	}
	return r
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
	tables, err := schemaTables()
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
		if _, err := s.db.ExecContext(ctx, renderIn(b.sql, s.tables, s.database)); err != nil {
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
		exists, err := s.extensionExists(ctx, b)
		if err != nil {
			return rep, err
		}
		if exists {
			continue
		}
		if _, err := s.db.ExecContext(ctx, renderIn(b.sql, s.tables, s.database)); err != nil {
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

// schemaTables returns the plugin's tables, then ours, as "table" blocks.
func schemaTables() ([]block, error) {
	plugin, err := parseBlocks(schemaSQL, "table")
	if err != nil {
		return nil, err
	}
	own, err := parseBlocks(ownSchemaSQL, "table")
	if err != nil {
		return nil, err
	}
	return append(plugin, own...), nil
}

// extensionExists checks one "column"/"index" block of extensions.sql.
func (s *Store) extensionExists(ctx context.Context, b block) (bool, error) {
	suffix, obj, ok := strings.Cut(b.name, ".")
	if !ok {
		return false, fmt.Errorf("extensions.sql: %s %q is not <table>.<name>", b.kind, b.name)
	}
	check := qColumnExists
	if b.kind == "index" {
		check = qIndexExists
	}
	var n int
	if err := s.db.GetContext(ctx, &n, s.query(check), s.tables[suffix], obj); err != nil {
		return false, fmt.Errorf("check %s %s.%s: %w", b.kind, s.tables[suffix], obj, err)
	}
	return n > 0, nil
}

func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.query(qTableExists), name)
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
	exts, err := parseBlocks(extensionsSQL, "column", "index")
	if err != nil {
		return err
	}
	for _, b := range exts {
		ok, err := s.extensionExists(ctx, b)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s %s.%s is missing: run `queuety migrate` (it only adds queuety-go's extensions, never changes the plugin's columns)", b.kind, s.tables[strings.SplitN(b.name, ".", 2)[0]], strings.SplitN(b.name, ".", 2)[1])
		}
	}
	for _, suffix := range ownSuffixes {
		ok, err := s.tableExists(ctx, s.tables[suffix])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("table %s (queuety-go's own) does not exist: run `queuety migrate`", s.tables[suffix])
		}
	}
	return nil
}
