package queuety

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	store "github.com/queuety-go/queuety/sql"
)

// TestOpenRetryingWaitsOnlyForAnOutage (N6): a refused login or a missing
// database fails at the first attempt (waiting would not change it); a
// port that refuses is retried, logged, until StartupRetry.For runs out,
// and the error says so and keeps the last reason.
func TestOpenRetryingWaitsOnlyForAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.New(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)

	var logged lockedBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	retry := StartupRetry{For: time.Minute, First: time.Millisecond, Max: 10 * time.Millisecond, Logger: log}

	badLogin := *cfg
	badLogin.User, badLogin.Passwd = "nobody_here", "wrong"
	_, err = OpenRetrying(ctx, Config{DSN: badLogin.FormatDSN()}, retry, nil)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrStartupGaveUp))
	noDB := *cfg
	noDB.DBName = "queuety_no_such_database"
	_, err = OpenRetrying(ctx, Config{DSN: noDB.FormatDSN()}, retry, nil)
	require.Error(t, err)
	require.Empty(t, logged.String(), "no retry for a login or database error")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := *cfg
	refused.Addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	retry.For = 300 * time.Millisecond
	_, err = OpenRetrying(ctx, Config{DSN: refused.FormatDSN()}, retry, nil)
	require.ErrorIs(t, err, ErrStartupGaveUp)
	require.ErrorContains(t, err, "connection refused")
	require.Contains(t, logged.String(), "database unreachable at start; retrying")

	// A check that fails on a cut connection is retried like the open.
	calls := 0
	c, err := OpenRetrying(ctx, Config{DSN: dsn}, StartupRetry{For: time.Minute, First: time.Millisecond, Logger: log},
		func(context.Context, *Client) error {
			calls++
			if calls < 3 {
				return io.ErrUnexpectedEOF
			}
			return nil
		})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Equal(t, 3, calls)
	require.True(t, store.Unreachable(mysql.ErrInvalidConn))
	require.False(t, store.Unreachable(&mysql.MySQLError{Number: 1045}))
}
