package store

import (
	"context"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// TestServerConnections counts the connections open on a database: the
// two a pool holds, not the admin's (no database).
func TestServerConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	name := cfg.DBName
	cfg.DBName = ""
	admin, err := sqlx.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer admin.Close()

	db, err := sqlx.Open("mysql", dsn)
	require.NoError(t, err)
	c1, err := db.Conn(ctx)
	require.NoError(t, err)
	c2, err := db.Conn(ctx)
	require.NoError(t, err)
	n, err := ServerConnections(ctx, admin, name)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_ = c1.Close()
	_ = c2.Close()
	require.NoError(t, db.Close())
}
