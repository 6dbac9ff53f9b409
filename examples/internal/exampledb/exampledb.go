// Package exampledb gives each example's test a database of its own on
// QUEUETY_TEST_DSN's server (default: the local MariaDB), dropped after
// the test.
package exampledb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// New creates the database and returns its DSN.
func New(t *testing.T) string {
	t.Helper()
	server := os.Getenv("QUEUETY_TEST_DSN")
	if server == "" {
		server = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "qt_examples_" + hex.EncodeToString(b)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a, err := sql.Open("mysql", cfg.FormatDSN()); err == nil {
			_, _ = a.Exec("DROP DATABASE " + name)
			a.Close()
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
