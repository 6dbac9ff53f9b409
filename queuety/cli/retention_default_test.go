package cli_test

import (
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
)

// oldHistory writes what a site keeps after a week: an 8-day-old completed
// job and an 8-day-old completed workflow with its step job, event and
// dispatch key. It returns the workflow's id.
func oldHistory(t *testing.T, db *sqlx.DB) int64 {
	t.Helper()
	exec1(t, db, "INSERT INTO wpt_queuety_jobs (handler, payload, status, created_at, completed_at) VALUES ('old_job', '[]', 'completed', NOW() - INTERVAL 8 DAY, NOW() - INTERVAL 8 DAY)")
	res, err := db.Exec("INSERT INTO wpt_queuety_workflows (name, status, state, total_steps, current_step, started_at, completed_at) VALUES ('old_wf', 'completed', '{}', 1, 1, NOW() - INTERVAL 8 DAY, NOW() - INTERVAL 8 DAY)")
	require.NoError(t, err)
	wf, err := res.LastInsertId()
	require.NoError(t, err)
	exec1(t, db, "INSERT INTO wpt_queuety_jobs (handler, payload, status, workflow_id, step_index, created_at, completed_at) VALUES ('OldStep', '[]', 'completed', ?, 0, NOW() - INTERVAL 8 DAY, NOW() - INTERVAL 8 DAY)", wf)
	exec1(t, db, "INSERT INTO wpt_queuety_workflow_events (workflow_id, step_index, handler, event, created_at) VALUES (?, 0, 'OldStep', 'step_completed', NOW() - INTERVAL 8 DAY)", wf)
	exec1(t, db, "INSERT INTO wpt_queuety_workflow_dispatch_keys (dispatch_key, workflow_id) VALUES ('order-42', ?)", wf)
	return wf
}

// A default `work` deletes nothing, as the plugin's worker: the site's
// QUEUETY_RETENTION_DAYS (here 1) is only the default of `purge`. The
// worker runs a 2.5 s job with the sweep scheduled every second, so a sweep
// that was on would have run at start and twice more; the 8-day-old job,
// workflow, step job, event and dispatch key all survive.
func TestDefaultWorkDeletesNothing(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "define( 'QUEUETY_RETENTION_DAYS', 1 );\ndefine( 'QUEUETY_LOG_RETENTION_DAYS', 1 );")
	runOK(t, "--wp-config", path, "migrate")
	db := openDB(t, dsn)
	wf := oldHistory(t, db)
	exec1(t, db, "INSERT INTO wpt_queuety_logs (handler, event, created_at) VALUES ('old_job', 'completed', NOW() - INTERVAL 8 DAY)")
	runOK(t, "--wp-config", path, "dispatch", "queuety.sleep", "--payload", `{"ms":2500}`)

	r := runOK(t, "--wp-config", path, "work", "--stop-when-empty", "--retention-schedule", "@every 1s")
	require.Contains(t, r.stdout, "Worker stopped (empty): 1 jobs (1 completed")
	require.Regexp(t, `wp-config setting not used" why="QUEUETY_RETENTION_DAYS: only the default of`, r.stderr)
	require.Equal(t, 3, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE status = 'completed'"), "old job, old step job, the job just run")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE handler = 'old_job'"))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_workflows WHERE id = ?", wf))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE workflow_id = ?", wf))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_workflow_events WHERE workflow_id = ?", wf))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_workflow_dispatch_keys WHERE dispatch_key = 'order-42'"), "the key keeps refusing a repeated dispatch")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_logs WHERE handler = 'old_job'"))

	// Turned on, the sweep takes what `wp queuety purge` would: the old
	// completed jobs (not the one run now), never the workflow or its key.
	runOK(t, "--wp-config", path, "dispatch", "queuety.noop")
	runOK(t, "--wp-config", path, "work", "--stop-when-empty", "--retention-days", "7")
	require.Zero(t, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE handler = 'old_job'"))
	require.Equal(t, 2, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE status = 'completed'"), "the two jobs run today")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_workflows WHERE id = ?", wf))
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_workflow_dispatch_keys WHERE dispatch_key = 'order-42'"))
}

// purge and log purge default to the site's defines, as `wp queuety purge`
// takes QUEUETY_RETENTION_DAYS: with it at 30 a 10-day-old completed job is
// kept; without it, the plugin's 7 days take it. The log define stands in
// for log purge's --older-than only when above 0.
func TestPurgeFollowsSiteDefine(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	path := writeWPConfig(t, dsn, "define( 'QUEUETY_RETENTION_DAYS', 30 );\ndefine( 'QUEUETY_LOG_RETENTION_DAYS', 30 );")
	runOK(t, "--wp-config", path, "migrate")
	db := openDB(t, dsn)
	exec1(t, db, "INSERT INTO wpt_queuety_jobs (handler, payload, status, created_at, completed_at) VALUES ('ten_days', '[]', 'completed', NOW() - INTERVAL 10 DAY, NOW() - INTERVAL 10 DAY)")
	exec1(t, db, "INSERT INTO wpt_queuety_logs (handler, event, created_at) VALUES ('ten_days', 'completed', NOW() - INTERVAL 10 DAY)")

	r := runOK(t, "--wp-config", path, "purge", "--dry-run")
	require.Equal(t, "Would purge 0 completed jobs older than 30 days.\n", r.stdout)
	r = runOK(t, "--wp-config", path, "purge", "--yes")
	require.Equal(t, "Purged 0 completed jobs.\n", r.stdout)
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE handler = 'ten_days'"))
	r = runOK(t, "--wp-config", path, "log", "purge", "--dry-run")
	require.Equal(t, "Would purge 0 log entries older than 30 days.\n", r.stdout)

	// The flag wins over the define.
	r = runOK(t, "--wp-config", path, "purge", "--older-than", "9", "--dry-run")
	require.Equal(t, "Would purge 1 completed jobs older than 9 days.\n", r.stdout)

	// No define: the plugin's 7; log purge has no default to take.
	bare := writeWPConfig(t, dsn, "define( 'QUEUETY_LOG_RETENTION_DAYS', 0 );")
	r = runOK(t, "--wp-config", bare, "purge", "--dry-run")
	require.Equal(t, "Would purge 1 completed jobs older than 7 days.\n", r.stdout)
	r = run(t, "--wp-config", bare, "log", "purge", "--dry-run")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "--older-than <days> is required (or a QUEUETY_LOG_RETENTION_DAYS above 0")

	// A define that is no number of days is refused, nothing deleted.
	bad := writeWPConfig(t, dsn, "define( 'QUEUETY_RETENTION_DAYS', -3 );")
	r = run(t, "--wp-config", bad, "purge", "--yes")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "wp-config's QUEUETY_RETENTION_DAYS (line")
	require.Equal(t, 1, count(t, db, "SELECT COUNT(*) FROM wpt_queuety_jobs WHERE handler = 'ten_days'"))
}
