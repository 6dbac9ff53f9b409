package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, true},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, true},
		{"wrapped deadlock", fmt.Errorf("claim: %w", &mysql.MySQLError{Number: 1213}), true},
		{"joined lock wait", errors.Join(errors.New("x"), &mysql.MySQLError{Number: 1205}), true},
		{"duplicate key", &mysql.MySQLError{Number: 1062}, false},
		{"syntax", &mysql.MySQLError{Number: 1064}, false},
		{"server gone", &mysql.MySQLError{Number: 2006}, false},
		{"plain", errors.New("Deadlock found when trying to get lock (1213)"), false},
		{"bad conn", driver.ErrBadConn, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Transient(tc.err))
		})
	}
}

// TestTransientFromServer provokes a real lock wait timeout.
func TestTransientFromServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dispatch(InsertJob{})
	holder, err := e.db.BeginTxx(e.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback() }()
	_, err = holder.ExecContext(e.ctx, render("UPDATE {jobs} SET priority = 1 WHERE id = ?", e.tables), id)
	require.NoError(t, err)

	conn, err := e.db.Connx(e.ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(e.ctx, "SET SESSION innodb_lock_wait_timeout = 1")
	require.NoError(t, err)
	_, err = conn.ExecContext(e.ctx, render("UPDATE {jobs} SET priority = 2 WHERE id = ?", e.tables), id)
	require.Error(t, err)
	require.True(t, Transient(err), "%v", err)
	require.True(t, Transient(fmt.Errorf("wrapped: %w", err)))
	_, err = conn.ExecContext(e.ctx, "SELECT * FROM no_such_table")
	require.False(t, Transient(err), "%v", err)
}

func TestConnectionLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"invalid conn", mysql.ErrInvalidConn, true},
		{"conn done", fmt.Errorf("x: %w", sql.ErrConnDone), true},
		{"bad conn", driver.ErrBadConn, true},
		{"net op", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"galera node not primary", &mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, true},
		{"galera commit outside the primary component", &mysql.MySQLError{Number: 1180, Message: "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"}, true},
		{"read-only server (a demoted writer)", &mysql.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}, true},
		{"deadlock", &mysql.MySQLError{Number: 1213}, false},
		{"plain", errors.New("x"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ConnectionLost(tc.err))
		})
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version                   string
		mariadb, skipLocked, desc bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", true, true, true},
		{"5.5.5-10.5.1-MariaDB", true, false, false},
		{"5.5.5-10.11.2-MariaDB", true, true, true},
		{"10.6.0-MariaDB", true, true, false},
		{"10.5.99-MariaDB", true, false, false},
		{"10.8.0-MariaDB", true, true, true},
		{"11.4.2-MariaDB", true, true, true},
		{"8.0.0", false, false, true},
		{"8.0.1", false, true, true},
		{"8.0.36-0ubuntu0.22.04.1", false, true, true},
		{"5.7.44", false, false, false},
		{"5.7.44-log", false, false, false},
		{"8.4.2", false, true, true},
		{"9.0.1", false, true, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			m, s, d := classify(tc.version)
			require.Equal(t, tc.mariadb, m, "mariadb")
			require.Equal(t, tc.skipLocked, s, "skip locked")
			require.Equal(t, tc.desc, d, "descending indexes")
		})
	}
}

func TestCheckServer(t *testing.T) {
	t.Parallel()
	ok := ServerInfo{Version: "10.11.19-MariaDB", MariaDB: true, SkipLocked: true}
	require.NoError(t, ok.CheckServer(false))
	require.NoError(t, ok.CheckServer(true))

	old := ServerInfo{Version: "5.5.5-10.5.1-MariaDB", MariaDB: true}
	for _, allow := range []bool{false, true} {
		err := old.CheckServer(allow)
		require.Error(t, err)
		require.Contains(t, err.Error(), "5.5.5-10.5.1-MariaDB")
		require.Contains(t, err.Error(), "SKIP LOCKED")
		require.Contains(t, err.Error(), "MariaDB >= 10.6 or MySQL >= 8.0.1")
	}

	for _, tc := range []struct {
		offset int
		shown  string
	}{
		{3600, "UTC+1.0h"},
		{-5 * 3600, "UTC-5.0h"},
		{19800, "UTC+5.5h"},
	} {
		zoned := ok
		zoned.UTCOffsetS = tc.offset
		err := zoned.CheckServer(false)
		require.Error(t, err)
		require.Contains(t, err.Error(), "server default time zone is "+tc.shown)
		require.Contains(t, err.Error(), "default_time_zone='+00:00'")
		require.Contains(t, err.Error(), "--allow-non-utc")
		require.NoError(t, zoned.CheckServer(true), "allowed")
	}

	// Both wrong: SKIP LOCKED is reported first.
	both := old
	both.UTCOffsetS = 3600
	require.ErrorContains(t, both.CheckServer(false), "SKIP LOCKED")
}

func TestInspectServer(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	// Our own time_zone setting must not hide the server default.
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Params = map[string]string{"time_zone": "'+05:00'"}
	info, err := InspectServer(context.Background(), cfg.FormatDSN(), nil)
	require.NoError(t, err)
	require.Contains(t, info.Version, "MariaDB")
	require.True(t, info.MariaDB)
	require.True(t, info.SkipLocked)
	require.True(t, info.DescIndexes)
	require.Zero(t, info.UTCOffsetS, "the test server runs on UTC")
	require.NoError(t, info.CheckServer(false))

	m, s, d := classify(info.Version)
	require.Equal(t, [3]bool{info.MariaDB, info.SkipLocked, info.DescIndexes}, [3]bool{m, s, d})

	_, err = InspectServer(context.Background(), "not a dsn", nil)
	require.ErrorContains(t, err, "invalid DSN")
}

func TestPrepareDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in         string
		user, pass, addr string
		net, db          string
	}{
		{"tcp", "app:s3cr3t@tcp(db.internal:3307)/wordpress", "app", "s3cr3t", "db.internal:3307", "tcp", "wordpress"},
		{"unix socket", "wp@unix(/run/mysqld/mysqld.sock)/site", "wp", "", "/run/mysqld/mysqld.sock", "unix", "site"},
		{"overrides ours", "root@tcp(127.0.0.1:3306)/x?parseTime=false&loc=Local&interpolateParams=false&time_zone=%27%2B05%3A00%27&readTimeout=5s",
			"root", "", "127.0.0.1:3306", "tcp", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := PrepareDSN(tc.in)
			require.NoError(t, err)
			cfg, err := mysql.ParseDSN(out)
			require.NoError(t, err)
			require.Equal(t, tc.user, cfg.User)
			require.Equal(t, tc.pass, cfg.Passwd)
			require.Equal(t, tc.addr, cfg.Addr)
			require.Equal(t, tc.net, cfg.Net)
			require.Equal(t, tc.db, cfg.DBName)
			require.True(t, cfg.ParseTime)
			require.Equal(t, time.UTC, cfg.Loc)
			require.True(t, cfg.InterpolateParams)
			require.Equal(t, "'+00:00'", cfg.Params["time_zone"])
		})
	}
	out, err := PrepareDSN("root@tcp(127.0.0.1:3306)/x?readTimeout=5s")
	require.NoError(t, err)
	cfg, err := mysql.ParseDSN(out)
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.ReadTimeout, "other settings kept")

	_, err = PrepareDSN("not a dsn")
	require.ErrorContains(t, err, "invalid DSN")
}

// TestPrepareDSNKeepsCharset: the doc says utf8mb4 is the default, so a
// charset the operator chose must survive.
func TestPrepareDSNKeepsCharset(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	cfg, err := mysql.ParseDSN(e.dsn)
	require.NoError(t, err)
	base := cfg.FormatDSN()

	db, err := Open(e.ctx, base, 1, nil)
	require.NoError(t, err)
	var cs string
	require.NoError(t, db.GetContext(e.ctx, &cs, "SELECT @@character_set_client"))
	require.Equal(t, "utf8mb4", cs, "default")
	require.NoError(t, db.Close())

	db, err = Open(e.ctx, base+"?charset=latin1", 1, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.GetContext(e.ctx, &cs, "SELECT @@character_set_client"))
	require.Equal(t, "latin1", cs, "an explicit charset is kept")
}

// TestOpenSession checks the session Open gives: UTC zone, UTC times.
func TestOpenSession(t *testing.T) {
	t.Parallel()
	e := newEmptyEnv(t)
	var tz string
	require.NoError(t, e.db.GetContext(e.ctx, &tz, "SELECT @@session.time_zone"))
	require.Equal(t, "+00:00", tz)
	// Every transaction is READ COMMITTED without a per-transaction SET.
	var iso string
	require.NoError(t, e.db.GetContext(e.ctx, &iso, "SELECT @@session.tx_isolation"))
	require.Equal(t, "READ-COMMITTED", iso)
	tx, err := e.db.BeginTxx(e.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.GetContext(e.ctx, &iso, "SELECT @@session.tx_isolation"))
	require.Equal(t, "READ-COMMITTED", iso)
	require.NoError(t, tx.Rollback())
	var now time.Time
	require.NoError(t, e.db.GetContext(e.ctx, &now, "SELECT NOW()"))
	require.Equal(t, time.UTC, now.Location())
	require.WithinDuration(t, time.Now(), now, 10*time.Second)
	// A string parameter with a quote goes through client-side interpolation safely.
	var s string
	require.NoError(t, e.db.GetContext(e.ctx, &s, "SELECT ?", `it's "x" \ y`))
	require.Equal(t, `it's "x" \ y`, s)

	_, err = Open(e.ctx, "root@tcp(127.0.0.1:1)/x?timeout=1s", 1, nil)
	require.Error(t, err)
	require.ErrorContains(t, err, "cannot reach MySQL at tcp(127.0.0.1:1)/x")
}
