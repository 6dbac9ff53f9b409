package metrics

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type fixedTables struct{ snap Snapshot }

func (f *fixedTables) Snapshot(context.Context) (Snapshot, error) { return f.snap, nil }

type fixedPool struct{ st PoolStats }

func (f fixedPool) PoolStats() PoolStats { return f.st }

// Every status, wait reason and runtime of a queue the tables name reads
// 0 when none is there, so graphs have no gaps and rules need no absent().
func TestEveryStatusSeriesAtZero(t *testing.T) {
	t.Parallel()
	m := New(Config{Tables: &fixedTables{Snapshot{Jobs: []JobCount{{Queue: "mail", Status: "buried", N: 2}}}}})
	text := scrapeText(t, m)
	for _, st := range JobStatuses {
		want := "0"
		if st == "buried" {
			want = "2"
		}
		require.Contains(t, text, `queuety_jobs{queue="mail",status="`+st+`"} `+want)
	}
	for _, st := range WorkflowStatuses {
		require.Contains(t, text, `queuety_workflows{status="`+st+`"} 0`)
	}
	for _, st := range SessionStates {
		require.Contains(t, text, `queuety_worker_sessions{state="`+st+`"} 0`)
	}
	for _, r := range WaitReasons {
		require.Contains(t, text, `queuety_jobs_waiting{queue="mail",reason="`+r+`"} 0`)
	}
	for _, r := range QueueRuntimes {
		require.Contains(t, text, `queuety_queue_live_workers{queue="mail",runtime="`+r+`"} 0`)
	}
	for _, r := range []string{"go", "external", "php_pool"} {
		require.Contains(t, text, `queuety_live_workers{runtime="`+r+`"} 0`)
	}
	require.Contains(t, text, `queuety_stale_rescued_total{outcome="retried"} 0`)
	require.Contains(t, text, `queuety_retention_runs_total{result="ok"} 0`)
}

// The fleet gauges, the worker's sweeps and waits, the PHP pool and the
// build read what they were told.
func TestOperatorSeries(t *testing.T) {
	t.Parallel()
	now := time.Unix(5000, 0)
	snap := Snapshot{
		Jobs:         []JobCount{{Queue: "mail", Status: "pending", N: 5}},
		Waiting:      []WaitingCount{{Queue: "mail", Reason: "dependency", N: 3}},
		QueueWorkers: []QueueWorkers{{Queue: "mail", Runtime: "go", N: 2}, {Queue: "mail", Runtime: "plugin_php", N: 1}, {Queue: "idle", Runtime: "go", N: 1}},
		LiveWorkers:  map[string]float64{"go": 2, "external": 1},
	}
	m := New(Config{Tables: &fixedTables{snap}, Now: func() time.Time { return now },
		Pool:  fixedPool{PoolStats{Slots: 4, Processes: 3, Busy: 1, Spawns: 7, Kills: 2, Crashes: 1}},
		Build: Build{Version: "v1.2.3", GoVersion: "go1.26", Commit: "abc"}})
	m.ObserveQueueWait("mail", 3*time.Second)
	m.ObserveRescue(2, 1)
	m.ObserveRescue(1, 0)
	m.ObserveRetention("ok", map[string]int{"jobs": 10, "logs": 4})
	m.ObserveRetention("skipped", nil)
	text := scrapeText(t, m)
	for _, want := range []string{
		`queuety_jobs_waiting{queue="mail",reason="dependency"} 3`,
		`queuety_queue_live_workers{queue="mail",runtime="go"} 2`,
		`queuety_queue_live_workers{queue="mail",runtime="plugin_php"} 1`,
		`queuety_live_workers{runtime="go"} 2`,
		`queuety_live_workers{runtime="external"} 1`,
		`queuety_live_workers{runtime="php_pool"} 3`,
		`queuety_php_pool_processes 3`,
		`queuety_php_pool_slots{state="busy"} 1`,
		`queuety_php_pool_slots{state="idle"} 3`,
		`queuety_php_pool_restarts_total 3`,
		`queuety_php_pool_kills_total 2`,
		`queuety_php_pool_crashes_total 1`,
		`queuety_job_queue_wait_seconds_bucket{queue="mail",le="5"} 1`,
		`queuety_job_queue_wait_seconds_bucket{queue="mail",le="2.5"} 0`,
		`queuety_stale_rescued_total{outcome="retried"} 3`,
		`queuety_stale_rescued_total{outcome="buried"} 1`,
		`queuety_retention_runs_total{result="ok"} 1`,
		`queuety_retention_runs_total{result="skipped"} 1`,
		`queuety_retention_deleted_rows_total{kind="jobs"} 10`,
		`queuety_retention_last_success_timestamp_seconds 5000`,
		`queuety_build_info{commit="abc",go_version="go1.26",version="v1.2.3"} 1`,
	} {
		require.Contains(t, text, want)
	}
	require.Contains(t, text, `queuety_jobs{queue="idle",status="pending"} 0`, "a queue a live worker serves reads 0 when idle")
}

// Completions read from the log rows add up across snapshots: the counter
// only grows, whatever a retention sweep deletes.
func TestLogCompletionsAccumulate(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	tables := &fixedTables{Snapshot{Completions: []QueueCount{{Queue: "mail", N: 4}}}}
	m := New(Config{Tables: tables, Now: func() time.Time { return now }})
	require.Contains(t, scrapeText(t, m), `queuety_log_completions_total{queue="mail"} 4`)
	require.Contains(t, scrapeText(t, m), `queuety_log_completions_total{queue="mail"} 4`, "a cached snapshot is not counted twice")
	now = now.Add(DefaultCacheFor)
	tables.snap = Snapshot{Completions: []QueueCount{{Queue: "mail", N: 2}}}
	require.Contains(t, scrapeText(t, m), `queuety_log_completions_total{queue="mail"} 6`)
}

type failingTables struct{ err error }

func (f *failingTables) Snapshot(context.Context) (Snapshot, error) { return Snapshot{}, f.err }

// A failed read of the tables sets queuety_database_up to 0 and is logged
// with its reason once per reason, not at every scrape.
func TestTablesFailureLoggedOncePerReason(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	var logged strings.Builder
	tables := &failingTables{errors.New("dial tcp: connection refused")}
	m := New(Config{Tables: tables, Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	for range 3 {
		require.Contains(t, scrapeText(t, m), "queuety_database_up 0")
		now = now.Add(DefaultCacheFor)
	}
	require.Equal(t, 1, strings.Count(logged.String(), "connection refused"), logged.String())
	tables.err = errors.New("Error 1146: table doesn't exist")
	scrapeText(t, m)
	require.Equal(t, 1, strings.Count(logged.String(), "1146"), logged.String())
}
