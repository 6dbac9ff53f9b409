package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// The site's QUEUETY_STALE_TIMEOUT (3600) protects a PHP worker's 20-minute
// job from the daemon's sweep, where the default 600 s re-queued it while
// it ran; QUEUETY_RETRY_BACKOFF applies to the rescue (linear: 60 s).
func TestRecoverUsesSiteStaleTimeout(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "define( 'QUEUETY_STALE_TIMEOUT', 3600 );\ndefine( 'QUEUETY_RETRY_BACKOFF', 'linear' );")
	runOK(t, "--wp-config", path, "migrate")
	db := openDB(t, dsn)
	runOK(t, "--wp-config", path, "dispatch", "php_export")
	exec1(t, db, "UPDATE wpt_queuety_jobs SET status = 'processing', attempts = 2, reserved_at = NOW() - INTERVAL 20 MINUTE")

	r := runOK(t, "--wp-config", path, "recover")
	require.Equal(t, "Recovered 0 stale jobs (0 retried, 0 buried).\n", r.stdout, "20 min is not stale for this site")

	exec1(t, db, "UPDATE wpt_queuety_jobs SET reserved_at = NOW() - INTERVAL 61 MINUTE")
	r = runOK(t, "--wp-config", path, "recover")
	require.Equal(t, "Recovered 1 stale jobs (1 retried, 0 buried).\n", r.stdout)
	delay := count(t, db, "SELECT TIMESTAMPDIFF(SECOND, NOW(), available_at) FROM wpt_queuety_jobs")
	require.InDelta(t, 120, delay, 3, "linear backoff after attempt 2: 60 s x 2")

	// A flag still wins over the define.
	exec1(t, db, "UPDATE wpt_queuety_jobs SET status = 'processing', reserved_at = NOW() - INTERVAL 20 MINUTE")
	r = runOK(t, "--wp-config", path, "recover", "--stale-timeout", "600")
	require.Equal(t, "Recovered 1 stale jobs (1 retried, 0 buried).\n", r.stdout)
}

// work reads the site's settings too, and says where each came from.
func TestWorkLogsSiteSettings(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "define( 'QUEUETY_STALE_TIMEOUT', 3600 );\ndefine( 'QUEUETY_DEBUG', true );")
	runOK(t, "--wp-config", path, "migrate")
	r := runOK(t, "--wp-config", path, "work", "--once", "--concurrency", "3")
	require.Regexp(t, `msg=setting name=--stale-timeout value=3600s from="wp-config QUEUETY_STALE_TIMEOUT \(line \d+\)"`, r.stderr)
	require.Regexp(t, `msg=setting name=--debug value=true from="wp-config QUEUETY_DEBUG \(line \d+\)"`, r.stderr)
	require.Contains(t, r.stderr, "msg=setting name=--concurrency value=3 from=flag")
	require.Contains(t, r.stderr, `msg="wp-config read" path=`+path+" reader=php", "which reader, at info")
	require.Contains(t, r.stdout, "Worker stopped (empty): 0 jobs")
}
