package store

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestNewInNamesEveryTableWithItsDatabase: a Store of NewIn sends no
// statement that depends on the connection's database: every table of
// every named query and of the schema is named with its database, and
// DATABASE() is nowhere. A Store of New renders as it always has: tables
// alone, DATABASE() where the statement needs the database.
func TestNewInNamesEveryTableWithItsDatabase(t *testing.T) {
	t.Parallel()
	for _, n := range []Naming{
		{DBPrefix: "wp_"},
		{DBPrefix: "wp_2_", QueuetyPrefix: strp("")},
		{DBPrefix: "x_", Overrides: map[string]string{"jobs": "j", "logs": "l", "queue_states": "qs", "workflows": "wf"}},
	} {
		tables := mustResolve(t, n)
		alone, err := loadQueries(tables, "")
		require.NoError(t, err)
		in, err := loadQueries(tables, "site_db")
		require.NoError(t, err)
		var names []string
		for _, s := range allSuffixes() {
			names = append(names, regexp.QuoteMeta("`"+tables[s]+"`"))
		}
		names = append(names, "`queuety_go_markers`", `\{db\.\}`)
		table := regexp.MustCompile("(`site_db`\\.)?(" + strings.Join(names, "|") + ")")
		used := 0
		check := func(name, sql string) {
			t.Helper()
			require.NotContains(t, sql, "DATABASE()", name)
			for _, m := range table.FindAllStringSubmatch(sql, -1) {
				require.Equal(t, "`site_db`.", m[1], "%s names %s without its database: %s", name, m[2], sql)
				used++
			}
		}
		for name, sql := range in {
			check(name, sql)
			require.NotContains(t, alone[name], "`site_db`", name)
			if strings.Contains(sql, "'site_db'") {
				require.Contains(t, alone[name], "DATABASE()", "%s: the database as the connection's", name)
				require.Equal(t, alone[name], strings.ReplaceAll(sql, "'site_db'", "DATABASE()"), name)
			}
		}
		schema, err := schemaTables()
		require.NoError(t, err)
		exts, err := parseBlocks(extensionsSQL, "column", "index")
		require.NoError(t, err)
		for _, b := range append(schema, exts...) {
			check(b.name, renderIn(b.sql, tables, "site_db"))
		}
		require.Greater(t, used, 100, "the check saw the tables")
	}

	// A quote is doubled; a backslash cannot be written the same in every
	// sql_mode, so such a database is refused, named.
	require.Contains(t, renderIn("SELECT {database}", Tables{}, "it's"), "'it''s'")
	_, err := NewIn(nil, `a\b`, Tables{}, nil)
	require.ErrorContains(t, err, `a\\b`)
	_, err = NewIn(nil, "a`b", Tables{}, nil)
	require.ErrorContains(t, err, "cannot be quoted")
}

// serverPool opens a pool on the server of dsn whose connections are in
// another database (a fresh one), as a pool shared by a server's sites is
// in whichever database it was opened on.
func serverPool(t *testing.T) *Store {
	t.Helper()
	db, err := Open(context.Background(), testdb.New(t), 8, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &Store{db: db}
}

// inEnv is e's database served by a Store of NewIn on a pool whose
// connections are in another database.
func inEnv(t *testing.T, e *testEnv) *Store {
	t.Helper()
	cfg, err := mysql.ParseDSN(e.dsn)
	require.NoError(t, err)
	s, err := NewIn(serverPool(t).db, cfg.DBName, e.tables, e.clk)
	require.NoError(t, err)
	return s
}

// TestNewInLocksAreTheSingleSiteStores: the concurrency-group and
// retention locks a Store of NewIn takes are, byte for byte, those a
// single site's Store on that database takes, so a daemon serving the
// site alone and one serving it on a server's pool exclude each other;
// and they are not another database's.
func TestNewInLocksAreTheSingleSiteStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := inEnv(t, e)
	ctx := e.ctx

	// The lock names, computed by each side's own statement.
	lockName := func(s *Store, q string) string {
		expr := strings.TrimSuffix(strings.TrimPrefix(s.query(q), "SELECT IS_USED_LOCK("), ")")
		require.NotEqual(t, expr, s.query(q))
		var name string
		require.NoError(t, s.db.GetContext(ctx, &name, "SELECT "+expr, s.groupLockKey("g")))
		return name
	}
	require.Equal(t, lockName(e.s, qGroupLockHolder), lockName(in, qGroupLockHolder))
	other, err := NewIn(in.db, "another_db", e.tables, e.clk)
	require.NoError(t, err)
	require.NotEqual(t, lockName(e.s, qGroupLockHolder), lockName(other, qGroupLockHolder))

	// Each side's group lock holds the other off.
	for _, pair := range [][2]*Store{{in, e.s}, {e.s, in}} {
		holder, waiter := pair[0], pair[1]
		a, err := holder.BeginClaim(ctx)
		require.NoError(t, err)
		locked, err := a.LockGroups(ctx, []string{"g"}, time.Second)
		require.NoError(t, err)
		require.Equal(t, []string{"g"}, locked)
		b, err := waiter.BeginClaim(ctx)
		require.NoError(t, err)
		locked, err = b.LockGroups(ctx, []string{"g"}, 0)
		require.NoError(t, err)
		require.Empty(t, locked, "held by the other side")
		held, err := waiter.groupLockHeld(ctx, "g")
		require.NoError(t, err)
		require.True(t, held)
		require.NoError(t, b.Rollback())
		require.NoError(t, a.Rollback())
		held, err = waiter.groupLockHeld(ctx, "g")
		require.NoError(t, err)
		require.False(t, held)
	}

	// And the retention sweep's.
	for _, pair := range [][2]*Store{{in, e.s}, {e.s, in}} {
		release, ok, err := pair[0].RetentionLock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = pair[1].RetentionLock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "one sweep per database")
		release()
	}
}

// TestNewInServesItsDatabase: the schema check, the migration and a job's
// way through the claim read and write the Store's database, never the
// connection's (which has no tables at all).
func TestNewInServesItsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := serverPool(t)
	tables := mustResolve(t, Naming{DBPrefix: "wp_3_"})

	// The connection's database is empty: a Store on it alone fails its
	// schema check; one of NewIn migrates and checks its own database.
	alone, err := New(pool.db, tables, nil)
	require.NoError(t, err)
	require.ErrorContains(t, alone.CheckSchema(ctx), "does not exist")

	e := newEmptyEnv(t)
	e.tables = tables
	cfg, err := mysql.ParseDSN(e.dsn)
	require.NoError(t, err)
	in, err := NewIn(pool.db, cfg.DBName, tables, e.clk)
	require.NoError(t, err)
	require.ErrorContains(t, in.CheckSchema(ctx), "does not exist")
	rep, err := in.Migrate(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, rep.CreatedTables)
	require.NoError(t, in.CheckSchema(ctx))
	require.ErrorContains(t, alone.CheckSchema(ctx), "does not exist", "nothing made in the connection's database")
	require.NoError(t, func() error {
		s, err := New(e.db, tables, e.clk)
		if err != nil {
			return err
		}
		return s.CheckSchema(ctx)
	}(), "made in the Store's own database")

	// A job dispatched and claimed through the pool is the
	// database's row.
	e.s = in
	id := e.dispatch(InsertJob{})
	due, err := in.AnyDue(ctx, []string{"default"})
	require.NoError(t, err)
	require.True(t, due)
	rows := e.claimRunning("w1", "default", 10)
	require.Equal(t, []int64{id}, idsOf(rows))
	require.Equal(t, 1, e.count("SELECT COUNT(*) FROM {jobs} WHERE id = ? AND status = 'processing' AND reserved_by = 'w1'", id))
}
