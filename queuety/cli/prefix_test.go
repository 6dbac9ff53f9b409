package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// An explicitly empty WordPress prefix means tables without one, as PHP
// names them ($wpdb->prefix . 'queuety_jobs'); only an unset prefix is wp_.
func TestEmptyTablePrefixMeansNone(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), "'wpt_'", "''", 1)), 0o600))

	r := runOK(t, "--wp-config", path, "migrate")
	require.Contains(t, r.stdout, "created table queuety_jobs\n")
	require.True(t, tableExists(t, dsn, "queuety_jobs"))
	require.False(t, tableExists(t, dsn, "wp_queuety_jobs"))
	runOK(t, "--wp-config", path, "dispatch", "queuety.noop")
	require.Equal(t, 1, count(t, openDB(t, dsn), "SELECT COUNT(*) FROM `queuety_jobs`"))

	// --prefix '' is the same; no --prefix at all is wp_.
	require.Equal(t, "Schema up to date.\n", runOK(t, on(dsn, "--prefix", "", "migrate")...).stdout)
	require.Contains(t, runOK(t, on(dsn, "--prefix=", "status")...).stdout, "default")
	require.Contains(t, runOK(t, on(dsn, "migrate")...).stdout, "created table wp_queuety_jobs\n")
}

// QUEUETY_DB_PREFIX set to empty is an explicit empty prefix too. t.Setenv
// forbids t.Parallel.
func TestEmptyPrefixEnvironment(t *testing.T) {
	dsn := testdb.New(t)
	t.Setenv("QUEUETY_DB_PREFIX", "")
	require.Contains(t, runOK(t, on(dsn, "migrate")...).stdout, "created table queuety_jobs\n")
	require.False(t, tableExists(t, dsn, "wp_queuety_jobs"))
}
