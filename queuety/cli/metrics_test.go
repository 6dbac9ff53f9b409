package cli_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/testdb"
	"github.com/queuety-go/queuety/queuety/cli"
)

// scrape GETs path on addr with token ("" for none) and returns the
// status and body.
func scrape(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	rq, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	if token != "" {
		rq.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(rq)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// samples parses the exposition text: `name{labels}` → value (labels in
// the order the library writes them, by name).
func samples(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// metricsJobStatuses are the statuses queuety_jobs has for every queue.
var metricsJobStatuses = []string{"pending", "processing", "failed", "buried"}

// After a known set of dispatches and runs, /metrics (on work --http with
// the operator token, and on the token-less --metrics-listen listener)
// shows the table's counts and this process's outcomes; no token is 401,
// the worker token 403; /healthz and /readyz answer on both listeners.
func TestWorkMetricsMatchRows(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	db := openDB(t, dsn)
	for range 3 {
		dispatch(t, dsn, "queuety.noop")
	}
	dispatch(t, dsn, "--max-attempts", "1", "--payload", `{"message":"boom"}`, "queuety.fail")
	dispatch(t, dsn, "--max-attempts", "2", "--payload", `{"message":"again"}`, "queuety.fail")
	dispatch(t, dsn, "--queue", "held", "queuety.noop")
	dispatch(t, dsn, "--queue", "held", "queuety.noop")
	runOK(t, on(dsn, "pause", "held")...)
	exec1(t, db, "INSERT INTO wp_queuety_workflows (name, status, state, total_steps) VALUES ('a', 'paused', '{}', 1), ('b', 'paused', '{}', 1), ('c', 'completed', '{}', 1)")
	exec1(t, db, "INSERT INTO wp_queuety_activity_executions (workflow_id, step_index, job_id, activity_type, status, activity_options, retry_policy, created_at, updated_at) VALUES (1, 0, 999, 'x', 'completed', '{}', '{}', NOW(), NOW())")
	exec1(t, db, "INSERT INTO wp_queuety_worker_sessions (session_id, requirements, status, created_at, updated_at) VALUES ('s1', '[]', 'open', NOW(), NOW())")

	const wt, ot = "wt-0123456789abcdef", "ot-0123456789abcdef"
	d := startListening(t, exec.Command(bin, "--dsn", dsn, "work", "--http", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--queue", "default,held", "--concurrency", "4", "--poll-interval", "10ms", "--backoff", "3600", "--rescue-schedule", "off"),
		"QUEUETY_WORKER_TOKEN="+wt, "QUEUETY_OPERATOR_TOKEN="+ot)
	var metricsAddr string
	waitFor(t, 10*time.Second, "metrics listener", func() bool {
		m := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(d.stderr.String())
		if m != nil {
			metricsAddr = m[1]
		}
		return m != nil
	})
	waitFor(t, 15*time.Second, "jobs run", func() bool {
		return count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'completed'") == 3 &&
			count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'buried'") == 1 &&
			count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'pending' AND attempts = 1") == 1
	})
	time.Sleep(2100 * time.Millisecond) // past the snapshot cache of an early scrape, if any

	status, body := scrape(t, d.addr, "/metrics", "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	status, body = scrape(t, d.addr, "/metrics", wt)
	require.Equal(t, http.StatusForbidden, status, body)
	status, main := scrape(t, d.addr, "/metrics", ot)
	require.Equal(t, http.StatusOK, status, main)
	status, body = scrape(t, metricsAddr, "/metrics", "")
	require.Equal(t, http.StatusOK, status, body)

	for _, text := range []string{main, body} {
		s := samples(t, text)
		// Every status of every queue (the worker serves both), at 0 too,
		// and the table's counts.
		var rows []struct {
			Queue  string  `db:"queue"`
			Status string  `db:"status"`
			N      float64 `db:"n"`
		}
		require.NoError(t, db.Select(&rows, "SELECT queue, status, COUNT(*) AS n FROM `"+jobsTable+"` WHERE status <> 'completed' GROUP BY queue, status"))
		series := 0
		for k := range s {
			if strings.HasPrefix(k, "queuety_jobs{") {
				series++
			}
		}
		require.Equal(t, 2*len(metricsJobStatuses), series, text)
		for _, q := range []string{"default", "held"} {
			for _, st := range metricsJobStatuses {
				require.Contains(t, s, `queuety_jobs{queue="`+q+`",status="`+st+`"}`)
			}
		}
		for _, r := range rows {
			require.Equal(t, r.N, s[`queuety_jobs{queue="`+r.Queue+`",status="`+r.Status+`"}`], "%s/%s", r.Queue, r.Status)
		}
		require.Equal(t, float64(count(t, db, "SELECT COUNT(*) FROM `"+jobsTable+"` WHERE status = 'completed'")), s[`queuety_jobs_completed`])
		require.Equal(t, 3.0, s[`queuety_jobs_completed`])
		require.Equal(t, 1.0, s[`queuety_queue_paused{queue="held"}`])
		require.Equal(t, 0.0, s[`queuety_queue_paused{queue="default"}`])
		require.Contains(t, s, `queuety_queue_oldest_pending_age_seconds{queue="held"}`)
		require.Equal(t, 2.0, s[`queuety_workflows{status="paused"}`])
		require.Equal(t, 1.0, s[`queuety_workflows{status="completed"}`])
		require.Equal(t, 1.0, s[`queuety_activities{mode="local",state="completed"}`])
		require.Equal(t, 1.0, s[`queuety_worker_sessions{state="open"}`])

		require.Equal(t, 3.0, s[`queuety_jobs_processed_total{handler="queuety.noop",outcome="completed",queue="default"}`])
		require.Equal(t, 1.0, s[`queuety_jobs_processed_total{handler="queuety.fail",outcome="buried",queue="default"}`])
		require.Equal(t, 1.0, s[`queuety_jobs_processed_total{handler="queuety.fail",outcome="retried",queue="default"}`])
		require.Equal(t, 3.0, s[`queuety_job_duration_seconds_count{handler="queuety.noop",queue="default"}`])
		require.Equal(t, 2.0, s[`queuety_job_duration_seconds_count{handler="queuety.fail",queue="default"}`])
		require.Positive(t, s[`queuety_claim_duration_seconds_count`])
		require.Equal(t, 0.0, s[`queuety_worker_slots{state="busy"}`])
		require.Equal(t, 4.0, s[`queuety_worker_slots{state="idle"}`])
		require.Equal(t, 1.0, s[`queuety_database_up`])
		require.Contains(t, s, "go_goroutines")
		require.Contains(t, s, "process_cpu_seconds_total")
	}

	for _, addr := range []string{d.addr, metricsAddr} {
		status, body = scrape(t, addr, "/healthz", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "ok", strings.TrimSpace(body))
		status, body = scrape(t, addr, "/readyz", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "ready", strings.TrimSpace(body))
	}
	r := runOK(t, "health", "--url", "http://"+metricsAddr)
	require.Equal(t, "ready", strings.TrimSpace(r.stdout))
	runOK(t, "health", "--url", "http://"+d.addr+"/readyz")
	d.stop(t)
	r = run(t, "health", "--url", "http://"+metricsAddr, "--timeout", "2s")
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "not ready", r.String())
}

// queuety health checks the database and the schema itself: exit 1 on an
// unmigrated database, 0 once migrated.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	dsn := testdb.New(t)
	r := run(t, on(dsn, "health")...)
	require.Equal(t, cli.ExitError, r.code, r.String())
	require.Contains(t, r.stderr, "not ready", r.String())
	require.Contains(t, r.stderr, "queuety migrate", r.String())
	runOK(t, on(dsn, "migrate")...)
	r = runOK(t, on(dsn, "health")...)
	require.Equal(t, "ready", strings.TrimSpace(r.stdout))
}

// serve has /metrics too (operator token), without worker slots or
// in-process job counts, and --metrics-listen.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	dispatch(t, dsn, "queuety.noop")
	const wt, ot = "wt-0123456789abcdef", "ot-0123456789abcdef"
	d := startListening(t, exec.Command(bin, "--dsn", dsn, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"),
		"QUEUETY_WORKER_TOKEN="+wt, "QUEUETY_OPERATOR_TOKEN="+ot)
	var metricsAddr string
	waitFor(t, 10*time.Second, "metrics listener", func() bool {
		m := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(d.stderr.String())
		if m != nil {
			metricsAddr = m[1]
		}
		return m != nil
	})
	status, body := scrape(t, d.addr, "/metrics", wt)
	require.Equal(t, http.StatusForbidden, status, body)
	for _, tc := range []struct{ addr, token string }{{d.addr, ot}, {metricsAddr, ""}} {
		status, body = scrape(t, tc.addr, "/metrics", tc.token)
		require.Equal(t, http.StatusOK, status, body)
		s := samples(t, body)
		require.Equal(t, 1.0, s[`queuety_jobs{queue="default",status="pending"}`], body)
		require.NotContains(t, body, "queuety_worker_slots{")
		status, body = scrape(t, tc.addr, "/readyz", "")
		require.Equal(t, http.StatusOK, status, body)
	}
	d.stop(t)
}

// With the plugin's PHP workers and this daemon completing jobs on one
// queue, queuety_log_completions_total (the base of the completed-per-
// minute series) counts both: the PHP jobs are written as the plugin's
// worker leaves them (claimed without reserved_by, a started and a
// completed log row). The queue shows a live Go worker and the PHP
// workers, the daemon's claims their queue wait, and a retention-style
// delete of the rows does not lower the count.
func TestCompletionsCountPluginWorkers(t *testing.T) {
	t.Parallel()
	bin := stockBinary(t)
	dsn := newDB(t)
	db := openDB(t, dsn)
	addr, stop := startMetricsOnly(t, exec.Command(bin, "--dsn", dsn, "work", "--metrics-listen", "127.0.0.1:0",
		"--queue", "default", "--concurrency", "2", "--poll-interval", "10ms", "--rescue-schedule", "off"))
	metric := func(name string) float64 {
		status, body := scrape(t, addr, "/metrics", "")
		require.Equal(t, http.StatusOK, status, body)
		return samples(t, body)[name]
	}
	const completions = `queuety_log_completions_total{queue="default"}`
	// The listener answers before the database is connected (database_up
	// 0); the first read that works finds where the log ends.
	waitFor(t, 30*time.Second, "the tables read", func() bool {
		time.Sleep(100 * time.Millisecond)
		return metric("queuety_database_up") == 1
	})
	require.Zero(t, metric(completions), "the count starts where the log ends")

	for range 3 {
		dispatch(t, dsn, "queuety.noop")
	}
	for i := range 2 {
		res, err := db.Exec("INSERT INTO `"+jobsTable+"` (queue, handler, payload, status, attempts, max_attempts, available_at, reserved_at, completed_at, created_at)"+
			" VALUES ('default', 'SendInvoice', ?, 'completed', 1, 3, NOW(), NOW(), NOW(), NOW())", fmt.Sprintf(`{"n":%d}`, i))
		require.NoError(t, err)
		id, err := res.LastInsertId()
		require.NoError(t, err)
		exec1(t, db, "INSERT INTO `"+logsTable+"` (job_id, handler, queue, event, attempt) VALUES (?, 'SendInvoice', 'default', 'started', 1)", id)
		exec1(t, db, "INSERT INTO `"+logsTable+"` (job_id, handler, queue, event, attempt, duration_ms, memory_peak_kb) VALUES (?, 'SendInvoice', 'default', 'completed', 1, 3, 4096)", id)
	}
	waitFor(t, 30*time.Second, "five completions counted", func() bool {
		time.Sleep(200 * time.Millisecond)
		return metric(completions) >= 5
	})
	status, body := scrape(t, addr, "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	s := samples(t, body)
	require.Equal(t, 5.0, s[completions], "3 by the daemon, 2 by the plugin's PHP workers")
	require.Equal(t, 3.0, s[`queuety_jobs_processed_total{handler="queuety.noop",outcome="completed",queue="default"}`], "this process's own count sees only its jobs")
	require.Equal(t, 3.0, s[`queuety_job_queue_wait_seconds_count{queue="default"}`])
	require.Equal(t, 1.0, s[`queuety_queue_live_workers{queue="default",runtime="go"}`])
	require.Equal(t, 1.0, s[`queuety_queue_live_workers{queue="default",runtime="plugin_php"}`])
	require.Equal(t, 1.0, s[`queuety_live_workers{runtime="go"}`])
	require.Equal(t, 0.0, s[`queuety_live_workers{runtime="php_pool"}`])
	require.Contains(t, body, "queuety_build_info{")

	exec1(t, db, "DELETE FROM `"+jobsTable+"` WHERE status = 'completed'")
	dispatch(t, dsn, "queuety.noop")
	waitFor(t, 30*time.Second, "the sixth completion counted", func() bool {
		time.Sleep(200 * time.Millisecond)
		return metric(completions) >= 6
	})
	require.Equal(t, 6.0, metric(completions), "deleting completed rows does not lower the count")
	stop()
}

// startMetricsOnly starts a daemon serving only --metrics-listen and
// returns that address once it says it listens, and a stop that sends
// SIGTERM and requires exit 0.
func startMetricsOnly(t *testing.T, cmd *exec.Cmd) (string, func()) {
	t.Helper()
	var errb syncBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	proc := startCmd(t, cmd)
	exited := proc.exited
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s\nstderr:\n%s", cmd.Args, errb.String())
		}
	})
	var addr string
	waitFor(t, 30*time.Second, "the metrics listener", func() bool {
		if m := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr, func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("still running 30s after SIGTERM\n%s", errb.String())
		}
		require.NoError(t, proc.waitErr, errb.String())
	}
}

// work --php reports its pool: the processes alive (also as the php_pool
// live workers), its slots, and no restarts yet.
func TestWorkPHPPoolMetrics(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	app := filepath.Join(t.TempDir(), "app.php")
	require.NoError(t, os.WriteFile(app, []byte("<?php\n"), 0o644))
	worker, err := filepath.Abs(filepath.Join("..", "..", "php-bridge", "bin", "queuety-php-worker"))
	require.NoError(t, err)
	addr, stop := startMetricsOnly(t, exec.Command(stockBinary(t), "--dsn", dsn, "work", "--metrics-listen", "127.0.0.1:0",
		"--php", "php "+worker+" --bootstrap "+app, "--php-workers", "2", "--rescue-schedule", "off"))
	var s map[string]float64
	waitFor(t, 30*time.Second, "the pool's processes", func() bool {
		time.Sleep(100 * time.Millisecond)
		status, body := scrape(t, addr, "/metrics", "")
		require.Equal(t, http.StatusOK, status, body)
		s = samples(t, body)
		return s["queuety_php_pool_processes"] == 2
	})
	require.Equal(t, 2.0, s[`queuety_live_workers{runtime="php_pool"}`])
	require.Equal(t, 2.0, s[`queuety_php_pool_slots{state="idle"}`])
	require.Equal(t, 0.0, s[`queuety_php_pool_slots{state="busy"}`])
	require.Equal(t, 0.0, s[`queuety_php_pool_restarts_total`])
	require.Equal(t, 0.0, s[`queuety_php_pool_kills_total`])
	// Stop once started: a stop during the start-up checks exits 1.
	waitFor(t, 30*time.Second, "ready", func() bool {
		time.Sleep(100 * time.Millisecond)
		status, _ := scrape(t, addr, "/readyz", "")
		return status == http.StatusOK
	})
	stop()
}
