package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// Connection and DSN errors say what is wrong and how to fix it.
func TestConnectErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	server := strings.TrimSuffix(testdb.ServerDSN(), "/")
	for _, tc := range []struct {
		dsn  string
		code int
		want []string
	}{
		{"root@127.0.0.1:3306/x", cli.ExitUsage, []string{"invalid DSN: default addr for network", "tcp(127.0.0.1:3306)"}},
		{"not a dsn", cli.ExitUsage, []string{"invalid DSN: ", "want the form"}},
		{server + "/", cli.ExitUsage, []string{"names no database"}},
		{server + "/qt_no_such_db_at_all", cli.ExitError, []string{`database "qt_no_such_db_at_all" does not exist`, "CREATE DATABASE `qt_no_such_db_at_all`"}},
		{strings.Replace(server, "root@", "root:not-the-password@", 1) + "/x", cli.ExitError, []string{"refused the login", "check the user and password"}},
	} {
		r := run(t, "--dsn", tc.dsn, "status")
		require.Equal(t, tc.code, r.code, r.String())
		for _, w := range tc.want {
			require.Contains(t, r.stderr, w, r.String())
		}
		require.NotContains(t, r.stderr, "%!w", r.String())
		require.NotContains(t, r.stderr, "not-the-password", "the password is not printed")
		if tc.code != cli.ExitError || !strings.Contains(tc.want[0], "login") {
			continue
		}
		require.NotContains(t, r.stderr, "cannot reach", "the server answered")
	}
}

// Every command, not only work, names `queuety migrate` on an unmigrated
// database.
func TestUnmigratedDatabaseHint(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	for _, args := range [][]string{{"status"}, {"dispatch", "queuety.noop"}, {"workflow", "list"}, {"job", "list"}} {
		r := run(t, on(dsn, args...)...)
		require.Equal(t, cli.ExitError, r.code, r.String())
		require.Contains(t, r.stderr, "run `queuety migrate`", r.String())
	}
}
