package store

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// A tool's marks, the emptiness checks and the server statements of the
// scratch databases `bench` and `dev` run in.
func TestScratch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	marked, err := e.s.ScratchMarked(e.ctx, "bench")
	require.NoError(t, err)
	require.False(t, marked, "no marker table yet")

	require.NoError(t, e.s.MarkScratch(e.ctx, "bench"))
	require.NoError(t, e.s.MarkScratch(e.ctx, "bench"), "marking twice is a no-op")
	for tool, want := range map[string]bool{"bench": true, "dev": false} {
		marked, err := e.s.ScratchMarked(e.ctx, tool)
		require.NoError(t, err)
		require.Equal(t, want, marked, tool)
	}

	tables, err := e.s.BaseTables(e.ctx)
	require.NoError(t, err)
	require.Contains(t, tables, MarkerTable)
	require.Contains(t, tables, e.tables["jobs"])

	has, err := e.s.TableHasRows(e.ctx, e.tables["jobs"])
	require.NoError(t, err)
	require.False(t, has)
	has, err = e.s.TableHasRows(e.ctx, MarkerTable)
	require.NoError(t, err)
	require.True(t, has)

	// queries_scratch.sql names the marker table MarkerTable says.
	require.Contains(t, e.s.query(qScratchMark), "`"+MarkerTable+"`")
}

func TestCreateAndDropDatabase(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := "qt_scratch_" + hex.EncodeToString(rnd[:])
	exists := func() bool {
		var n int
		require.NoError(t, sqlx.GetContext(e.ctx, e.db, &n, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name))
		return n > 0
	}
	t.Cleanup(func() { _ = DropDatabase(e.ctx, e.db, name) })
	require.NoError(t, CreateDatabase(e.ctx, e.db, name))
	require.NoError(t, CreateDatabase(e.ctx, e.db, name), "an existing database is kept")
	require.True(t, exists())
	var charset string
	require.NoError(t, e.db.GetContext(e.ctx, &charset, "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name))
	require.Equal(t, "utf8mb4", charset)
	require.NoError(t, DropDatabase(e.ctx, e.db, name))
	require.NoError(t, DropDatabase(e.ctx, e.db, name), "a missing database is no error")
	require.False(t, exists())
	require.Equal(t, "`a``b`", quoteIdent("a`b"))
}
