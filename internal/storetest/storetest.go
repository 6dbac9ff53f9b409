// Package storetest builds, for tests of the packages above package store,
// a Store on a fresh migrated database (internal/testdb) with the
// WordPress default naming. Package store's own tests cannot use it: it
// imports store.
package storetest

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/clock"
	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
)

// New returns a Store with every table migrated, on the clock clk (nil:
// the wall clock), and its database handle, closed at cleanup. The store
// pipelines on two connections of its own, as a client's does.
func New(t testing.TB, clk clock.Clock, maxConns int) (*store.Store, *sqlx.DB) {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.New(t)
	db, pipe, err := store.OpenWithPipeline(ctx, dsn, maxConns, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(); _ = pipe.Close() })
	tables, err := store.Naming{DBPrefix: "wp_"}.Resolve()
	require.NoError(t, err)
	st, err := store.New(db, tables, clk)
	require.NoError(t, err)
	st.UsePipeline(pipe)
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	return st, db
}
