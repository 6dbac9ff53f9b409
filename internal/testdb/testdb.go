// Package testdb gives each test its own MariaDB database, created on demand
// and dropped when the test ends, so tests run in parallel without sharing
// tables.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// ServerDSN is the server tests use: QUEUETY_TEST_DSN, or the local MariaDB
// of this project's machines. Its database name, if any, is ignored.
func ServerDSN() string {
	if v := os.Getenv("QUEUETY_TEST_DSN"); v != "" {
		return v
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// New creates an empty database named after the test and returns a DSN for
// it. The database is dropped at cleanup unless QUEUETY_TEST_KEEP_DB is set.
func New(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(ServerDSN())
	require.NoError(t, err, "QUEUETY_TEST_DSN")
	name := dbName(t.Name())
	cfg.DBName = ""
	admin, err := sqlx.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer admin.Close()
	ctx := context.Background()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err, "creating test database (is MariaDB running at %s?)", cfg.Addr)
	t.Cleanup(func() {
		if os.Getenv("QUEUETY_TEST_KEEP_DB") != "" {
			t.Logf("kept test database %s", name)
			return
		}
		a, err := sqlx.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.Exec("DROP DATABASE IF EXISTS `" + name + "`")
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// dbName makes a short, unique, valid database name from a test name.
func dbName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("qt_%s_%s", s, hex.EncodeToString(rnd[:]))
}
